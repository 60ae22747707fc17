"""Video through the loader, as a trainer gets it: a corpus of real ffmpeg videos (`mmpt synth
--profile video`) prepared under Qwen2.5-VL, planned and loaded. Each batch holds the videos'
pixel_values_videos exactly as mmpt.preprocess_video gives them for the stored file (itself
checked against PyAV + Pillow in test_video_fidelity.py), Qwen2-VL's <|video_pad|> tokens, and
M-RoPE positions equal to an independent NumPy implementation of Qwen2.5-VL's get_rope_index
with its time alignment (second_per_grid_ts x tokens_per_second). Under CP 2 every video is
encoded by exactly one rank and its rows are routed like an image's. Phone videos with a
rotation tag are prepared, planned and loaded as displayed."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

import load_corpus
import mmpt
from video_ref import reference

MERGE = 2
TOKENS_PER_SECOND = 2  # Qwen2.5-VL's vision_config.tokens_per_second


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    work = tmp_path_factory.mktemp("video_load")
    run = load_corpus.runner(work)
    run("synth", "--profile", "video", "--source", load_corpus.REAL_COCO, "--samples", "6",
        "--min-duration", "1", "--max-duration", "3", "--out", "raw")
    run("prepare", "raw/video.jsonl", "--out", "ds")
    return str(work / "ds")


def rope_index(ids, image_grids, video_grids, seconds, special):
    """Qwen2.5-VL's get_rope_index for one unpadded sequence, in NumPy: text advances all three
    rows; an item's block starts one past the largest position before it, its temporal row at
    int(float32(step) * second_per_grid_t * tokens_per_second) for a video, 0 for an image."""
    ids = list(ids)
    blocks, st, image, video = [], 0, 0, 0

    def next_position():
        return int(max(b.max() for b in blocks)) + 1 if blocks else 0
    for s, token in enumerate(ids[:-1]):
        if token != special["vision_start"] or \
                ids[s + 1] not in (special["image"], special["video"]):
            continue
        ed = s + 1
        if ids[ed] == special["image"]:
            (t, h, w), step_seconds = image_grids[image], 0.0
            image += 1
        else:
            (t, h, w), step_seconds = video_grids[video], seconds[video]
            video += 1
        gh, gw = h // MERGE, w // MERGE
        text_len = ed - st
        start = next_position()
        blocks.append(np.tile(np.arange(text_len), (3, 1)) + start)
        steps = (np.arange(t).astype(np.float32) * np.float32(step_seconds) *
                 np.float32(TOKENS_PER_SECOND)).astype(np.int64)
        grid = np.stack([np.repeat(steps, gh * gw), np.tile(np.repeat(np.arange(gh), gw), t),
                         np.tile(np.arange(gw), t * gh)])
        blocks.append(grid + text_len + start)
        st = ed + t * gh * gw
    if st < len(ids):
        start = next_position()
        blocks.append(np.tile(np.arange(len(ids) - st), (3, 1)) + start)
    return np.concatenate(blocks, axis=1)


def special_ids():
    tokenizer = mmpt.Tokenizer(mmpt.default_tokenizer_path())
    return {"vision_start": tokenizer.token_to_id("<|vision_start|>"),
            "image": tokenizer.token_to_id("<|image_pad|>"),
            "video": tokenizer.token_to_id("<|video_pad|>")}


def batches(path, cp=1, cp_rank=0, steps=2):
    return load_corpus.load_batches(path, cp, cp_rank, steps)


def test_videos_load_as_qwen25_vl_takes_them(videos):
    special = special_ids()
    reader = mmpt.DatasetReader(videos)
    seen = 0
    for batch in batches(videos):
        tokens, positions = batch["tokens"], batch["position_ids"]
        grids = batch["video_grid_thw"]
        seconds = batch["second_per_grid_ts"]
        assert len(batch["encoded_videos"]) == len(grids) == len(seconds) > 0
        assert batch["pixel_values_videos"].shape == (int(grids.prod(axis=1).sum()), 1176)
        assert len(batch["image_grid_thw"]) == 0  # a video corpus: no images
        row = video = 0
        cu, cu_padded = batch["cu_seqlens"], batch["cu_seqlens_padded"]
        for s, index in enumerate(batch["sample_index"]):
            begin = int(cu_padded[s])
            ids = tokens[begin:begin + int(cu[s + 1] - cu[s])]
            n = int((ids == special["video"]).sum())
            assert n > 0 and int((ids == special["image"]).sum()) == 0
            # Sample s holds one video: its grid, its tokens, its pixels as the binding gives.
            ref = mmpt.preprocess_video(reader.media(int(index), 0))
            assert list(grids[video]) == list(ref["video_grid_thw"])
            assert n == int(np.prod(ref["video_grid_thw"])) // MERGE ** 2
            assert seconds[video] == pytest.approx(ref["second_per_grid_ts"], rel=1e-3)
            patches = ref["pixel_values_videos"].shape[0]
            np.testing.assert_array_equal(
                batch["pixel_values_videos"][row:row + patches], ref["pixel_values_videos"])
            want = rope_index(ids, [], grids[video:video + 1], seconds[video:video + 1], special)
            np.testing.assert_array_equal(positions[:, begin:begin + len(ids)], want)
            row += patches
            video += 1
            seen += 1
    assert seen >= 2


def test_under_cp2_each_video_is_encoded_once_and_routed(videos):
    first = batches(videos, cp=2, cp_rank=0, steps=1)[0]
    second = batches(videos, cp=2, cp_rank=1, steps=1)[0]
    items = len(first["image_rows"])
    assert items > 0 and list(first["image_rows"]) == list(second["image_rows"])
    encoded = sorted(list(first["encoded_videos"]) + list(second["encoded_videos"]))
    assert encoded == list(range(items))  # every vision item is a video, encoded once
    for batch in (first, second):
        rows = batch["video_grid_thw"].prod(axis=1).sum() if len(batch["video_grid_thw"]) else 0
        assert batch["pixel_values_videos"].shape[0] == rows
    # Every row of every video is consumed somewhere, once.
    consumed = np.zeros(int(np.asarray(first["image_rows"]).sum()), dtype=int)
    offsets = np.concatenate([[0], np.cumsum(first["image_rows"])])
    for consumer, item, row_begin, row_count, _, _ in first["routes"]:
        consumed[offsets[item] + row_begin:offsets[item] + row_begin + row_count] += 1
    assert (consumed == 1).all()


def test_vision_dp_embed_writes_the_video_rows_at_the_video_pads(videos):
    torch = pytest.importorskip("torch")
    from mmpt.torch import to_tensors, vision_dp_embed
    special = special_ids()
    batch = batches(videos, steps=1)[0]
    t = to_tensors(batch)

    def encoder(pixels, grid):  # one row per merged token: the mean of its 4 patches
        return pixels.reshape(-1, MERGE ** 2, pixels.shape[1]).mean(dim=1)[:, :8]

    embeds = torch.zeros(len(t["tokens"]), 8)
    out = vision_dp_embed(encoder, t["pixel_values"], t["image_grid_thw"], embeds,
                          batch["routing"], input_ids=t["tokens"],
                          image_token_id=special["image"], video_token_id=special["video"],
                          videos=(t["pixel_values_videos"], t["video_grid_thw"],
                                  batch["encoded_images"], batch["encoded_videos"]))
    pads = (t["tokens"] == special["video"]).nonzero().reshape(-1)
    torch.testing.assert_close(out[pads], encoder(t["pixel_values_videos"], None), rtol=0, atol=0)


def test_the_memory_bound_counts_the_videos_pixels(videos):
    """The loader reserves a micro-step's bytes from the plan before building it: the videos'
    patches count, so what it reserved covers the batch it built."""
    dataset = mmpt.Dataset(videos)
    planner = mmpt.Planner(dataset, dp=1, seq_len=8192, ga=1, allow_repeat=True)
    loader = mmpt.Loader(dataset, planner, dp_rank=0, steps=1, threads=1, prefetch_micro_steps=1)
    batch = next(loader)
    assert batch["pixel_values_videos"].nbytes > 0
    assert loader.stats()["peak_bytes_in_flight"] >= batch["pixel_values_videos"].nbytes


def test_a_loader_dropped_mid_video_does_not_deadlock_once_pyav_is_imported(videos):
    """Importing PyAV installs its FFmpeg log callback, which takes the GIL: a loader whose
    workers were decoding videos when it was dropped joined them holding the GIL, and hung.
    In a process of its own, with a timeout."""
    pytest.importorskip("av")
    script = ("import sys, av, mmpt\n"
              "dataset = mmpt.Dataset(sys.argv[1])\n"
              "planner = mmpt.Planner(dataset, dp=1, seq_len=8192, ga=4, allow_repeat=True)\n"
              "for _ in range(3):\n"
              "    loader = mmpt.Loader(dataset, planner, dp_rank=0, prefetch_micro_steps=4)\n"
              "    next(loader)\n"
              "    del loader\n"
              "print('done')\n")
    done = subprocess.run([sys.executable, "-c", script, videos], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "done"


ROTATED = {90: [2, 28, 20], 180: [2, 20, 28], 270: [2, 28, 20]}  # grid of a 64x48 clip, turned


def test_rotated_videos_prepare_plan_and_load_as_displayed(tmp_path):
    """64x48 clips with an mp4 rotate tag (a display matrix): prepare records the displayed
    size, the plan's grid is the turned frame's, and the loaded pixels are the reference's for
    the ffmpeg CLI's autorotated decode, resized by torchvision as qwen-vl-utils does."""
    pytest.importorskip("torchvision")
    if shutil.which("ffmpeg") is None:
        pytest.skip("the ffmpeg CLI is not installed")
    ffmpeg = ["ffmpeg", "-nostdin", "-y", "-loglevel", "error"]
    subprocess.run([*ffmpeg, "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10:duration=1",
                    "-c:v", "libx264", "-pix_fmt", "yuv420p", str(tmp_path / "coded.mp4")],
                   check=True)
    with open(tmp_path / "rotated.jsonl", "w") as jsonl:
        for degrees in ROTATED:
            name = f"rotate{degrees}.mp4"
            subprocess.run([*ffmpeg, "-i", str(tmp_path / "coded.mp4"), "-c", "copy",
                            "-metadata:s:v:0", f"rotate={degrees}", str(tmp_path / name)],
                           check=True)
            turns = [{"from": "human", "value": "<video>\nDescribe the video."},
                     {"from": "gpt", "value": f"A test pattern turned {degrees} degrees."}]
            jsonl.write(json.dumps({"id": str(degrees), "video": name,
                                    "conversations": turns}) + "\n")
    load_corpus.runner(tmp_path)("prepare", "rotated.jsonl", "--out", "ds", "--on-error", "fail")
    path = str(tmp_path / "ds")
    dataset = mmpt.DatasetReader(path)
    refs = {d: reference(str(tmp_path / f"rotate{d}.mp4"), autorotate=True) for d in ROTATED}
    seen = {}
    # One step holds all three samples (each ~300 tokens), and few repeats.
    for batch in load_corpus.load_batches(path, steps=1, seq_len=2048):
        row = 0
        for video, index in enumerate(batch["sample_index"]):
            line = dataset.line(int(index)).decode()
            degrees = next(d for d in ROTATED if f"turned {d} degrees" in line)
            grid = [int(g) for g in batch["video_grid_thw"][video]]
            ref = refs[degrees]
            assert grid == ref["grid_thw"] == ROTATED[degrees]
            meta = dataset.sample_meta(int(index))["media"][0]
            assert (meta["width"], meta["height"]) == ((48, 64) if degrees != 180 else (64, 48))
            rows = int(np.prod(grid))
            got = batch["pixel_values_videos"][row:row + rows]
            # Within one level of torchvision (resize.h), in normalized units.
            assert np.abs(got - ref["pixel_values"]).max() <= 1.001 / 255 / 0.2613
            row += rows
            seen[degrees] = grid
    assert sorted(seen) == sorted(ROTATED)
