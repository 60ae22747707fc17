"""Audio in video (Qwen2.5-Omni's use_audio_in_video): a video with a sound track made by
ffmpeg (testsrc2 + a sine, 5 s) in chat records, prepared with --audio-in-video under the
qwen_omni template and the qwen2.5-omni presets, planned and loaded. Each loaded sample must
equal independent NumPy implementations of the reference written here from transformers'
qwen2_5_omni processor (replace_multimodal_special_tokens, get_chunked_index) and model
(get_rope_index); the sound track's features equal the track extracted by `ffmpeg -vn`
through mmpt's plain audio path; the plan costs both encoders. Qwen3-Omni's order (merged by
time, video first on ties) is checked at the rule level (mmpt.audio_in_video) against the same
kind of NumPy reference of qwen3_omni_moe, and end to end under the qwen3_omni template and
presets with a 10 s track over two of its encoder's 8 s attention windows."""

import json
import subprocess

import numpy as np
import pytest

import load_corpus
import mmpt

SECONDS = 5  # the video and its sound track


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", *args], check=True)


def make_av(path, seconds, sound=True):
    """testsrc2 at 10 fps, 112x84, H.264; with a 440 Hz sine at 44.1 kHz in AAC."""
    inputs = ["-f", "lavfi", "-i", f"testsrc2=size=112x84:rate=10:duration={seconds}"]
    if sound:
        inputs += ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=44100:duration={seconds}"]
    ffmpeg(*inputs, "-pix_fmt", "yuv420p", "-c:v", "libx264", *(["-c:a", "aac"] if sound else []),
           str(path))


# --- the reference, from transformers' Qwen2.5-Omni (use_audio_in_video) ---------------------

def chunked_index(keys, per_chunk):
    """get_chunked_index: (start, end) runs; the threshold moves on one chunk per token."""
    out, start, chunk = [], 0, 1
    for i, key in enumerate(keys):
        if key >= chunk * per_chunk:
            out.append((start, i))
            start, chunk = i, chunk + 1
    out.append((start, len(keys)))
    return out


def omni25_audio_len(frames):
    return ((frames - 1) // 2 + 1 - 2) // 2 + 1


def video_positions(grid, spg, pps, base, merge=2):
    """get_llm_pos_ids_for_vision with t_index = (arange(t) · spg · pps) in float32."""
    t, gh, gw = grid[0], grid[1] // merge, grid[2] // merge
    t_index = np.arange(t, dtype=np.float32) * np.float32(spg) * np.float32(pps)
    rows = [np.repeat(t_index, gh * gw), np.tile(np.repeat(np.arange(gh), gw), t),
            np.tile(np.arange(gw), t * gh)]
    return np.stack(rows).astype(np.float64) + base


def omni25_placeholders(grid, spg, audio_len, pps=25, per_chunk=50, merge=2):
    """The processor's block between <|vision_bos|><|audio_bos|> and the end markers: "V" and
    "A" in order."""
    t, gh, gw = grid[0], grid[1] // merge, grid[2] // merge
    video = chunked_index(np.repeat(np.arange(t), gh * gw) * spg * pps, per_chunk)
    audio = chunked_index(np.arange(audio_len), per_chunk)
    kinds = []
    for j in range(max(len(video), len(audio))):
        if j < len(video):
            kinds += ["V"] * (video[j][1] - video[j][0])
        if j < len(audio):
            kinds += ["A"] * (audio[j][1] - audio[j][0])
    return kinds


def omni25_rope_index(ids, ids_of, video_grids, spgs, audio_frames, pps=25, per_chunk=50):
    """get_rope_index(use_audio_in_video=True) for a sample of text, audio clips and videos
    with their sound tracks (no images): [3, len(ids)]."""
    ids = list(ids)
    pieces = []

    def st():
        return pieces[-1].max() + 1 if pieces else 0

    def text(n, start):
        return np.broadcast_to(np.arange(n, dtype=np.float64) + start, (3, n))
    audio_nums = ids.count(ids_of["<|audio_bos|>"])
    bos_pair = [ids_of["<|vision_bos|>"], ids_of["<|audio_bos|>"]]
    video_nums = sum(1 for i in range(len(ids) - 1) if ids[i:i + 2] == bos_pair)
    s = vi = ai = 0
    remain_videos, remain_audios = video_nums, audio_nums
    end = len(ids) + 1
    for _ in range(audio_nums):
        video_pad, audio_pad = ids_of["<|VIDEO|>"], ids_of["<|AUDIO|>"]
        ed_video = ids.index(video_pad, s) if video_pad in ids and remain_videos > 0 else end
        ed_audio = ids.index(audio_pad, s) if audio_pad in ids and remain_audios > 0 else end
        audio_len = omni25_audio_len(audio_frames[ai])
        if ed_audio < ed_video:
            text_len = ed_audio - s - 1
            if text_len:
                pieces.append(text(text_len, st()))
            pieces.append(text(1, st()))
            pieces.append(text(audio_len, st()))
            pieces.append(text(1, st()))
            s += text_len + 2 + audio_len
            ai, remain_audios = ai + 1, remain_audios - 1
            continue
        text_len = ed_video - s - 2
        if text_len:
            pieces.append(text(text_len, st()))
        bos = st()
        pieces += [text(1, bos), text(1, bos)]
        base = st()
        audio = text(audio_len, base)
        video = np.floor(video_positions(video_grids[vi], spgs[vi], pps, 0)) + base
        video_chunks = chunked_index(video[0] - base, per_chunk)
        audio_chunks = chunked_index(audio[0] - base, per_chunk)
        for j in range(max(len(video_chunks), len(audio_chunks))):
            if j < len(video_chunks):
                pieces.append(video[:, video_chunks[j][0]:video_chunks[j][1]])
            if j < len(audio_chunks):
                pieces.append(audio[:, audio_chunks[j][0]:audio_chunks[j][1]])
        eos = st()
        pieces += [text(1, eos), text(1, eos)]
        s += text_len + 4 + audio_len + video.shape[1]
        vi, ai = vi + 1, ai + 1
        remain_videos, remain_audios = remain_videos - 1, remain_audios - 1
    if s < len(ids):
        pieces.append(text(len(ids) - s, st()))
    return np.concatenate(pieces, axis=1)


# --- the reference, from transformers' Qwen3-Omni (use_audio_in_video) -----------------------

def omni3_block(grid, spg, audio_len, start, pps=13, merge=2):
    """The processor's order ("V"/"A", video first on ties) and get_rope_index's positions of
    the whole block from its <|vision_start|> at `start`, and the text's next position."""
    t, gh, gw = grid[0], grid[1] // merge, grid[2] // merge
    keys = np.repeat(np.arange(t), gh * gw) * spg * pps
    kinds, v, a = [], 0, 0
    while v < len(keys) and a < audio_len:
        if keys[v] <= a:
            kinds.append("V")
            v += 1
        else:
            kinds.append("A")
            a += 1
    kinds += ["V"] * (len(keys) - v) + ["A"] * (audio_len - a)
    pieces = [np.broadcast_to(np.arange(2, dtype=np.float64) + start, (3, 2))]
    base = start + 2
    audio = np.broadcast_to(np.arange(audio_len, dtype=np.float64) + base, (3, audio_len))
    video = video_positions(grid, spg, pps, base)
    v = a = 0
    while v < video.shape[1] and a < audio.shape[1]:
        if video[0, v] <= audio[0, a]:
            pieces.append(video[:, v:v + 1])
            v += 1
        else:
            pieces.append(audio[:, a:a + 1])
            a += 1
    if v < video.shape[1]:
        pieces.append(video[:, v:])
    if a < audio.shape[1]:
        pieces.append(audio[:, a:])
    eos = pieces[-1].max() + 1
    pieces.append(np.broadcast_to(np.arange(2, dtype=np.float64) + eos, (3, 2)))
    return kinds, np.concatenate(pieces, axis=1), eos + 2


def kinds_of(runs):
    return [("V" if kind == "video" else "A") for kind, _, count in runs for _ in range(count)]


@pytest.mark.parametrize("grid,spg,audio_len,pps", [
    ((5, 6, 8), 1.0, 125, 25),    # 2 fps, 5 s
    ((3, 4, 4), 1.0, 40, 25),     # the video outlasts its sound: ends after its last run
    ((2, 2, 6), 4.0, 120, 25),    # 0.5 fps: a step passes two chunk thresholds
    ((4, 4, 4), 1.6, 333, 25),    # 1.25 fps, sound longer than the video
])
def test_qwen25_omni_rule_equals_the_reference(grid, spg, audio_len, pps):
    got = mmpt.audio_in_video("qwen2.5-omni", list(grid), spg, audio_len,
                              position_id_per_seconds=pps, start=7)
    assert kinds_of(got["runs"]) == omni25_placeholders(grid, spg, audio_len, pps)
    # The block alone through the reference: text "ab" before it, so it starts at 2... here 7.
    ids_of = {"<|vision_bos|>": 1, "<|audio_bos|>": 2, "<|VIDEO|>": 3, "<|AUDIO|>": 4,
              "<|audio_eos|>": 5, "<|vision_eos|>": 6}
    block = [1, 2] + [3 if k == "V" else 4 for k in kinds_of(got["runs"])] + [5, 6]
    frames = 4 * audio_len  # 4 mel frames a token: omni25_audio_len(4n) = n
    assert omni25_audio_len(frames) == audio_len
    want = omni25_rope_index([0] * 7 + block + [0], ids_of, [grid], [spg], [frames])
    np.testing.assert_array_equal(got["positions"], want[:, 7:-1])
    assert got["next"] == want[0, -1]


@pytest.mark.parametrize("grid,spg,audio_len", [
    ((5, 4, 6), 1.0, 65),   # 2 fps: keys 13 t, whole
    ((3, 2, 2), 1.0, 20),   # the video outlasts its sound
    ((4, 2, 4), 2.0, 100),  # 1 fps
])
def test_qwen3_omni_rule_equals_the_reference(grid, spg, audio_len):
    got = mmpt.audio_in_video("qwen3-omni", list(grid), spg, audio_len,
                              position_id_per_seconds=13, start=11)
    kinds, positions, following = omni3_block(grid, spg, audio_len, 11)
    assert kinds_of(got["runs"]) == kinds
    assert (positions == np.round(positions)).all()  # whole: comparable with int32
    np.testing.assert_array_equal(got["positions"], positions)
    assert got["next"] == following


# --- end to end: Qwen2.5-Omni -----------------------------------------------------------------

def conversations():
    return [
        [{"role": "user", "content": [{"type": "video", "video": "av.mp4"},
                                      {"type": "text", "text": "What happens?"}]},
         {"role": "assistant", "content": "A tone plays over a test pattern."}],
        # a clip of its own before the video: audio items are taken in order
        [{"role": "user", "content": [{"type": "text", "text": "Listen:"},
                                      {"type": "audio", "audio": "tone.wav"},
                                      {"type": "text", "text": "then watch"},
                                      {"type": "video", "video": "av.mp4"}]},
         {"role": "assistant", "content": "The same tone."}],
    ]


@pytest.fixture(scope="module")
def omni(tmp_path_factory):
    work = tmp_path_factory.mktemp("audio_in_video")
    run = load_corpus.runner(work)
    report = json.loads(run("synth", "--profile", "audio", "--source", load_corpus.REAL_COCO,
                            "--samples", "1", "--out", "raw", "--json"))
    make_av(work / "av.mp4", SECONDS)
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=660:sample_rate=16000:duration=1.2",
           str(work / "tone.wav"))
    with open(work / "chat.jsonl", "w") as f:
        for k, messages in enumerate(conversations()):
            f.write(json.dumps({"id": f"v{k}", "messages": messages}) + "\n")
    flags = ["--chat-template", "qwen_omni", "--tokenizer", str(work / report["tokenizer"]),
             "--audio", "qwen2.5-omni", "--vision", "qwen2.5-omni", "--on-error", "fail"]
    run("prepare", "chat.jsonl", "--out", "ds", "--audio-in-video", *flags)
    run("prepare", "chat.jsonl", "--out", "plain", *flags)
    return work, run, flags[3], flags


def track_samples(path):
    """The sound track as mmpt's plain audio path decodes it: extracted by `ffmpeg -vn`
    (the AAC stream copied), decoded to 16 kHz mono."""
    m4a = str(path) + ".track.m4a"
    ffmpeg("-i", str(path), "-vn", "-c:a", "copy", m4a)
    with open(m4a, "rb") as f:
        return mmpt.decode_audio(f.read())


def video_blocks(batch, video_start, audio_start, video_pad):
    """Per sample of `batch`, whose one video is written with its sound track: its ids, where
    it begins in the pack, whether a clip of its own comes first (two audio start markers), the
    block's first token, and the video's groups (grid, seconds per step), a grid step each."""
    tokens, cu, cu_padded = batch["tokens"], batch["cu_seqlens"], batch["cu_seqlens_padded"]
    videos = iter(zip(batch["video_grid_thw"], batch["second_per_grid_ts"]))
    for s in range(len(cu) - 1):
        begin = int(cu_padded[s])
        ids = tokens[begin:begin + int(cu[s + 1] - cu[s])]
        starts = np.flatnonzero(ids == video_start)
        assert len(starts) == 1 and ids[starts[0] + 1] == audio_start
        groups, left = [], int((ids == video_pad).sum())
        while left > 0:
            groups.append(next(videos))
            assert groups[-1][0][0] == 1
            left -= int(np.prod(groups[-1][0])) // 4
        yield ids, begin, int((ids == audio_start).sum()) == 2, int(starts[0]), groups


def assert_cp2_rows_land_on_pads(path, seq_len, audio_pad, video_pad):
    """On both ranks of CP 2, every audio and video row a rank consumes lands on a pad of its
    kind, and every such pad of the rank's tokens gets one."""
    for rank in range(2):
        for batch in load_corpus.load_batches(str(path), cp=2, cp_rank=rank, steps=2,
                                              seq_len=seq_len):
            tokens = batch["tokens"]
            for pad, rows in ((audio_pad, "audio_exchange_positions"),
                              (video_pad, "exchange_positions")):
                assert (tokens[batch[rows]] == pad).all()
                assert len(batch[rows]) == (tokens == pad).sum()


def test_loaded_samples_equal_the_reference(omni):
    work, _, tokenizer, _ = omni
    ids_of = {name: mmpt.Tokenizer(tokenizer).token_to_id(name) for name in
              ("<|vision_bos|>", "<|audio_bos|>", "<|VIDEO|>", "<|AUDIO|>", "<|audio_eos|>",
               "<|vision_eos|>")}
    track = track_samples(work / "av.mp4")
    track_frames = -(-len(track) // 160)  # the mask's ones under padding to the window
    whole = mmpt.log_mel(track, audio="qwen2.5-omni")["input_features"]
    with open(work / "tone.wav", "rb") as f:
        tone_frames = -(-len(mmpt.decode_audio(f.read())) // 160)
    checked = set()
    for batch in load_corpus.load_batches(str(work / "ds"), steps=2, seq_len=4096):
        positions = batch["position_ids"]
        features, mask = batch["input_features"], batch["feature_attention_mask"]
        clip = 0
        for ids, begin, with_tone, at, groups in video_blocks(
                batch, *(ids_of[m] for m in ("<|vision_bos|>", "<|audio_bos|>", "<|VIDEO|>"))):
            grid = (len(groups), int(groups[0][0][1]), int(groups[0][0][2]))
            spg = float(groups[0][1])
            assert spg == 1.0 and grid[0] == SECONDS  # 2 fps: a second a grid step
            audio_len = omni25_audio_len(track_frames)
            kinds = omni25_placeholders(grid, spg, audio_len)
            block = ([ids_of["<|vision_bos|>"], ids_of["<|audio_bos|>"]] +
                     [ids_of["<|VIDEO|>" if k == "V" else "<|AUDIO|>"] for k in kinds] +
                     [ids_of["<|audio_eos|>"], ids_of["<|vision_eos|>"]])
            np.testing.assert_array_equal(ids[at:at + len(block)], block)
            frames = ([tone_frames] if with_tone else []) + [track_frames]
            want = omni25_rope_index(ids, ids_of, [grid], [spg], frames)
            np.testing.assert_array_equal(positions[:, begin:begin + len(ids)], want)
            # The track's parts, 2 s (200 frames) each: the whole track's features, in order.
            clip += with_tone
            parts = -(-track_frames // 200)
            for p in range(parts):
                valid = int(mask[clip + p].sum())
                assert valid == min(200, track_frames - 200 * p)
                np.testing.assert_allclose(features[clip + p][:, :valid],
                                           whole[:, 200 * p:200 * p + valid], atol=1e-5, rtol=0)
            clip += parts
            checked.add(with_tone)
        assert clip == features.shape[0]
    assert checked == {False, True}
    # Under CP 2 every consumed video and audio row lands on its own pad: a block's groups and
    # parts are routed as the items they are.
    assert_cp2_rows_land_on_pads(work / "ds", 4096, ids_of["<|AUDIO|>"], ids_of["<|VIDEO|>"])


def test_the_plan_costs_both_encoders(omni):
    work, run, _, _ = omni
    source = json.loads(run("inspect", "ds", "--json"))["sources"][0]
    plain = json.loads(run("inspect", "plain", "--json"))["sources"][0]
    track = omni25_audio_len(-(-len(track_samples(work / "av.mp4")) // 160))
    # Each sample's sound track adds a clip and its tokens to the audio encoder's; the video's
    # stay.
    assert source["audios"]["total"] == plain["audios"]["total"] + 2
    assert source["audio_tokens"]["total"] == plain["audio_tokens"]["total"] + 2 * track
    assert source["video_tokens"]["total"] == plain["video_tokens"]["total"] > 0
    plan = ["plan", "--seq-len", "4096", "--allow-repeat", "--json"]
    with_track = json.loads(run(plan[0], "ds", *plan[1:]))["mmpt"]["audio_seconds"]
    without = json.loads(run(plan[0], "plain", *plan[1:]))["mmpt"]["audio_seconds"]
    assert with_track > without > 0


def test_a_video_without_sound_is_named(omni, tmp_path):
    work, _, _, flags = omni
    make_av(tmp_path / "mute.mp4", 2, sound=False)
    with open(tmp_path / "chat.jsonl", "w") as f:
        f.write(json.dumps({"id": "mute", "messages": [
            {"role": "user", "content": [{"type": "video", "video": "mute.mp4"}]},
            {"role": "assistant", "content": "Nothing."}]}) + "\n")
    done = subprocess.run([load_corpus.MMPT, "prepare", "chat.jsonl", "--out", "ds",
                           "--audio-in-video", *flags], cwd=tmp_path, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert done.returncode != 0
    assert "sample 'mute'" in done.stdout and "sound track" in done.stdout, done.stdout


# --- end to end: Qwen3-Omni -------------------------------------------------------------------

# Sound tracks over two of Qwen3-Omni's 8 s attention windows: 10 s at 10 fps (sampled at 2 fps
# exactly) and 9.7 s (97 frames, 18 sampled: 1.86 fps, 9 grid steps, the track outlasting them).
# Either way a grid step is 1 s (keys 13·t): the processor's video_second_per_grid is
# temporal_patch_size / its fps argument, 2.0, not the rate the frames were sampled at.
VIDEOS3 = {"av10.mp4": 10, "av97.mp4": 9.7}


def omni3_conversations():
    first, second = VIDEOS3
    talks = conversations()  # the video alone, and a clip of its own before it
    return ([json.loads(json.dumps(c).replace("av.mp4", first)) for c in talks] +
            [json.loads(json.dumps(talks[0]).replace("av.mp4", second))])


@pytest.fixture(scope="module")
def omni3(omni):
    work, run, _, _ = omni
    for name, seconds in VIDEOS3.items():
        make_av(work / name, seconds)
    with open(work / "chat3.jsonl", "w") as f:
        for k, messages in enumerate(omni3_conversations()):
            f.write(json.dumps({"id": f"w{k}", "messages": messages}) + "\n")
    tokenizer = str(work / "raw" / "audio.qwen3-omni.tokenizer.json")
    run("prepare", "chat3.jsonl", "--out", "ds3", "--audio-in-video", "--chat-template",
        "qwen3_omni", "--tokenizer", tokenizer, "--audio", "qwen3-omni", "--vision", "qwen3-omni",
        "--on-error", "fail")
    return work, tokenizer


def test_qwen3_omni_loaded_samples_equal_the_reference(omni3):
    """The block merged by time (video first on ties) between both start and both end markers,
    get_rope_index's positions around it, and the track encoded as the reference's encoder
    takes it: one clip per 8 s window (800 frames), each the whole track's features, its rows
    feeding the block's audio pads in order although its runs sit between video steps."""
    import qwen3_omni_ref as ref
    work, tokenizer = omni3
    ids_of = {name: mmpt.Tokenizer(tokenizer).token_to_id(name) for name in
              ("<|vision_start|>", "<|audio_start|>", "<|video_pad|>", "<|audio_pad|>",
               "<|audio_end|>", "<|vision_end|>")}
    tracks = {}  # by grid steps: valid frames and the whole track's features
    for name, steps in zip(VIDEOS3, (10, 9)):
        track = track_samples(work / name)
        frames = ref.valid_frames(len(track))
        features = mmpt.log_mel(track, audio="qwen3-omni", frames=frames)["input_features"]
        tracks[steps] = frames, features
    with open(work / "tone.wav", "rb") as f:
        tone_frames = ref.valid_frames(len(mmpt.decode_audio(f.read())))
    checked = set()
    for batch in load_corpus.load_batches(str(work / "ds3"), steps=2, seq_len=8192):
        tokens, positions = batch["tokens"], batch["position_ids"]
        features, mask = batch["input_features"], batch["feature_attention_mask"]
        clip = 0
        for ids, begin, with_tone, at, groups in video_blocks(
                batch, *(ids_of[m] for m in ("<|vision_start|>", "<|audio_start|>",
                                             "<|video_pad|>"))):
            grid = (len(groups), int(groups[0][0][1]), int(groups[0][0][2]))
            assert all(float(spg) == 1.0 for _, spg in groups)
            track_frames, whole = tracks[grid[0]]
            before = ref.rope_index(ids[:at], audio_frames=[tone_frames] if with_tone else [])
            kinds, block_positions, following = omni3_block(
                grid, 1.0, ref.audio_tokens(track_frames),
                before.max() + 1 if at else 0)
            block = ([ids_of["<|vision_start|>"], ids_of["<|audio_start|>"]] +
                     [ids_of["<|video_pad|>" if k == "V" else "<|audio_pad|>"] for k in kinds] +
                     [ids_of["<|audio_end|>"], ids_of["<|vision_end|>"]])
            np.testing.assert_array_equal(ids[at:at + len(block)], block)
            after = len(ids) - at - len(block)
            want = np.concatenate([before, block_positions,
                                   np.arange(after, dtype=np.float64)[None].repeat(3, 0) +
                                   following], axis=1)
            np.testing.assert_array_equal(positions[:, begin:begin + len(ids)], want)
            clip += with_tone
            windows = -(-track_frames // 800)
            assert windows == 2
            for w in range(windows):
                valid = int(mask[clip + w].sum())
                assert valid == min(800, track_frames - 800 * w)
                assert batch["audio_rows"][clip + w] == ref.audio_tokens(valid)
                np.testing.assert_allclose(features[clip + w][:, :valid],
                                           whole[:, 800 * w:800 * w + valid], atol=1e-5, rtol=0)
            clip += windows
            checked.add((grid[0], with_tone))
        assert clip == features.shape[0]
        # Every audio row, the clips' rows in order, feeds the next audio pad in token order.
        order = np.argsort(batch["audio_exchange_positions"])
        np.testing.assert_array_equal(batch["audio_exchange_gather_index"][order],
                                      np.arange(int(batch["audio_rows"].sum())))
        assert (tokens[batch["audio_exchange_positions"]] == ids_of["<|audio_pad|>"]).all()
    assert checked == {(10, False), (10, True), (9, False)}
    assert_cp2_rows_land_on_pads(work / "ds3", 8192, ids_of["<|audio_pad|>"],
                                 ids_of["<|video_pad|>"])
