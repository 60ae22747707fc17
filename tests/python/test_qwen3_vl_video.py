"""Qwen3-VL video end to end: real ffmpeg clips (24, 29.97 and 30 fps, odd frame counts) in chat
records are prepared for Qwen3-VL, planned and loaded, and every loaded sample must equal an
independent reference (tests/python/qwen3_vl_video_ref.py, written from Hugging Face's
processing_qwen3_vl.py, video_processing_qwen3_vl.py and modeling_qwen3_vl.py):
- ids: Hugging Face's chat template and tokenizer (tests/load/reference_processor.js) with each
  video replaced by its timestamped groups, `<{t:.1f} seconds>` + start + pads + end, frames
  sampled by the Qwen3VLVideoProcessor rule (or qwen-vl-utils' under `qwen3-vl-utils`), one
  video cut by video_start / video_end;
- positions: a NumPy get_rope_index (one t=1 block per temporal group);
- grids: one [1, h, w] per group, the planned length, and each group's pixel rows those of its
  two frames in the whole video's patchified frames."""

import json
import os
import subprocess

import numpy as np
import pytest
from PIL import Image

import load_corpus
import mmpt
import qwen3_vl_video_ref as ref

ROOT = load_corpus.ROOT
REFERENCE = os.path.join(ROOT, "tests", "load", "reference_processor.js")
# name: (fps as ffmpeg takes it, frames, width, height)
CLIPS = {"a.mp4": ("24", 61, 320, 180), "b.mp4": ("30000/1001", 91, 256, 144),
         "c.mp4": ("30", 127, 200, 120)}


def conversations():
    def text(t):
        return {"type": "text", "text": t}

    def video(name, **clip):
        return {"type": "video", "video": name, **clip}
    return [
        [{"role": "user", "content": [video("a.mp4"), text("What happens?")]},
         {"role": "assistant", "content": "A test pattern moves."}],
        # text that touches a timestamp (':<' may merge), two videos in one turn
        [{"role": "user", "content": [text("Watch:"), video("b.mp4"), text(" and then"),
                                      video("c.mp4")]},
         {"role": "assistant", "content": "Two clips."}],
        # an image and a video, and a clip of a video (qwen-vl-utils' video_start / video_end)
        # in the assistant's turn: its timestamps are the video's own
        [{"role": "user", "content": [{"type": "image", "image": "still.png"}, video("c.mp4"),
                                      text("Same?")]},
         {"role": "assistant", "content": [text("Compare with"),
                                           video("a.mp4", video_start=0.5, video_end=2.0)]}],
    ]


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    out = tmp_path_factory.mktemp("qwen3_vl_video")
    for name, (fps, frames, width, height) in CLIPS.items():
        ref.make_video(out / name, fps, frames, width, height)
    Image.new("RGB", (96, 64), (200, 30, 30)).save(out / "still.png")
    with open(out / "chat.jsonl", "w") as f:
        for k, messages in enumerate(conversations()):
            f.write(json.dumps({"id": f"v{k}", "messages": messages}) + "\n")
    return out


def prepare(raw, vision):
    dataset = str(raw / ("ds-" + vision))
    if not os.path.exists(dataset):
        load_corpus._run("prepare", str(raw / "chat.jsonl"), "--out", dataset, "--vision", vision,
                         "--chat-template", "qwen3_vl", "--on-error", "fail")
    return dataset


def reference_video(path, vision, video_start=None, video_end=None):
    """(grid t, h, w in patches, expansion text) of a video as the reference rules make it.
    A clip under Hugging Face's rule (which has none) is cut as qwen-vl-utils cuts it, then
    sampled by the processor's count over its frames, linspace from its first frame."""
    total, fps = ref.probe(path)
    _, _, width, height = CLIPS[os.path.basename(path)]
    if vision == "qwen3-vl":
        first, last, count = ref.utils_frame_range(total, fps, video_start, video_end)
        n = len(ref.hf_sample(count, fps))
        indices = np.linspace(first, last, n).round().astype(int).tolist()
        h, w = ref.hf_resize(n, height, width, min_pixels=ref.HUB_VIDEO_MIN_PIXELS,
                             max_pixels=ref.HUB_VIDEO_MAX_PIXELS)
    else:
        indices = ref.utils_sample(total, fps, video_start, video_end)
        h, w = ref.utils_resize(len(indices), height, width)
    groups = (len(indices) + 1) // 2
    grid = (groups, h // ref.PATCH, w // ref.PATCH)
    return grid, ref.expand_video(ref.timestamps(indices, fps), *grid)


def preset_file(vision, tmp_path):
    """The vision preset as one file (a `base` preset merged), for the JavaScript reference."""
    def load(name):
        with open(os.path.join(ROOT, "presets", "vision", name + ".json")) as f:
            doc = json.load(f)
        if "base" in doc:
            base = load(doc.pop("base"))
            base["resolution"].update(doc.pop("resolution", {}))
            base.update(doc)
            doc = base
        return doc
    path = tmp_path / (vision + ".json")
    path.write_text(json.dumps(load(vision)))
    return str(path)


def reference_samples(raw, vision, tmp_path):
    """Per conversation: (ids, image grids, video grids) from the reference."""
    requests, video_grids = [], []
    for messages in conversations():
        videos, grids, images = [], [], []
        for message in messages:
            for part in message["content"] if isinstance(message["content"], list) else []:
                if part["type"] == "video":
                    grid, text = reference_video(raw / part["video"], vision,
                                                 part.get("video_start"), part.get("video_end"))
                    videos.append(text)
                    grids.append(grid)
                elif part["type"] == "image":
                    images.append([96, 64])
        requests.append({"messages": messages, "images": images, "videos": videos})
        video_grids.append(grids)
    path, out = tmp_path / "requests.jsonl", tmp_path / "reference.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in requests))
    subprocess.run(["node", REFERENCE, "--tokenizer", mmpt.default_tokenizer_path(),
                    "--vision", preset_file(vision, tmp_path),
                    "--template", os.path.join(ROOT, "tests", "load",
                                               "qwen3_vl_chat_template.jinja"),
                    "--processor", "Qwen3VLProcessor", str(path), str(out)], check=True)
    answers = [json.loads(line) for line in out.read_text().splitlines()]
    return [(a["input_ids"], [tuple(g) for g in a["image_grid_thw"]], grids)
            for a, grids in zip(answers, video_grids)]


def special_ids():
    tokenizer = mmpt.Tokenizer(mmpt.default_tokenizer_path())
    return {name: tokenizer.token_to_id(f"<|{name}|>")
            for name in ("vision_start", "image_pad", "video_pad")}


@pytest.mark.parametrize("vision", ["qwen3-vl", "qwen3-vl-utils"])
def test_loaded_videos_equal_the_qwen3_vl_reference(raw, vision, tmp_path):
    dataset = prepare(raw, vision)
    expected = reference_samples(raw, vision, tmp_path)
    special = special_ids()
    seen = set()
    for batch in load_corpus.load_batches(dataset, steps=2):
        cu, cu_padded = batch["cu_seqlens"], batch["cu_seqlens_padded"]
        video_row = 0  # this sample's first row of video_grid_thw
        image_row = 0
        for s, index in enumerate(batch["sample_index"]):
            index = int(index)
            begin = int(cu_padded[s])
            ids = batch["tokens"][begin:begin + int(cu[s + 1] - cu[s])]
            want_ids, image_grids, video_grids = expected[index]
            assert list(ids) == want_ids, f"sample {index} under {vision}"
            groups = [(1, h, w) for t, h, w in video_grids for _ in range(t)]
            got_groups = [tuple(g) for g in
                          batch["video_grid_thw"][video_row:video_row + len(groups)]]
            assert got_groups == groups, f"sample {index}: one [1, h, w] per temporal group"
            want = ref.rope_index(ids, image_grids, video_grids, ref.MERGE, special["image_pad"],
                                  special["video_pad"], special["vision_start"])
            np.testing.assert_array_equal(batch["position_ids"][:, begin:begin + len(ids)], want)
            video_row += len(groups)
            image_row += len(image_grids)
            seen.add(index)
    assert seen == {0, 1, 2}


def test_each_group_holds_its_own_frames_rows(raw):
    """A group's pixel rows are its temporal step of the whole clip: for one sample, the rows of
    its groups concatenated equal the clip patchified at once (the same frames, the same size)."""
    dataset = prepare(raw, "qwen3-vl")
    batch = load_corpus.load_batches(dataset, steps=1)[0]
    grids = batch["video_grid_thw"]
    assert (grids[:, 0] == 1).all()
    rows = (grids[:, 1] * grids[:, 2]).astype(int)
    pixels = batch["pixel_values_videos"]
    assert pixels.shape[0] == rows.sum()
    # Groups of one clip have one size; consecutive groups of one clip are distinct frames.
    first, second = pixels[:rows[0]], pixels[rows[0]:rows[0] + rows[1]]
    assert first.shape == second.shape and not np.array_equal(first, second)


def test_a_dataset_prepared_under_another_video_rule_is_refused_at_planning(raw):
    dataset = prepare(raw, "qwen3-vl-utils")
    manifest = os.path.join(dataset, "mmpt.json")
    doc = json.load(open(manifest))
    doc["vision"]["preset"] = "qwen3-vl"  # the other rule counts other groups here
    with open(manifest, "w") as f:
        json.dump(doc, f)
    with pytest.raises(Exception, match="temporal groups where the dataset has"):
        load_corpus.load_batches(dataset, steps=1)


def test_under_cp2_each_group_is_encoded_once_and_its_rows_routed(raw):
    """Vision DP under CP: the groups of a video are items of their own, spread over the CP
    ranks by cost, each encoded by one rank, every row consumed once."""
    dataset = prepare(raw, "qwen3-vl")
    first, second = (load_corpus.load_batches(dataset, cp=2, cp_rank=r, steps=1)[0]
                     for r in (0, 1))
    items = len(first["image_rows"])
    encoded = sorted(list(first["encoded_videos"]) + list(second["encoded_videos"]) +
                     list(first["encoded_images"]) + list(second["encoded_images"]))
    assert items > 3 and encoded == list(range(items))
    assert len(first["encoded_videos"]) > 0 and len(second["encoded_videos"]) > 0
    consumed = np.zeros(int(np.asarray(first["image_rows"]).sum()), dtype=int)
    offsets = np.concatenate([[0], np.cumsum(first["image_rows"])])
    for consumer, item, row_begin, row_count, _, _ in first["routes"]:
        consumed[offsets[item] + row_begin:offsets[item] + row_begin + row_count] += 1
    assert (consumed == 1).all()


def test_pixels_are_normalized_with_qwen3_vls_mean_and_std(raw):
    """Qwen3-VL's processors normalize with mean = std = 0.5 (not CLIP's): the still image, one
    colour (200, 30, 30), gives (v / 255 - 0.5) / 0.5 in every value of its channel."""
    dataset = prepare(raw, "qwen3-vl")
    batch = load_corpus.load_batches(dataset, steps=1)[0]
    assert len(batch["image_grid_thw"]) >= 1  # the still image, perhaps repeated
    rows = batch["pixel_values"].reshape(len(batch["pixel_values"]), 3, -1)  # C, T·P·P
    for channel, value in enumerate((200, 30, 30)):
        np.testing.assert_allclose(rows[:, channel], (value / 255 - 0.5) / 0.5, atol=1e-6)
