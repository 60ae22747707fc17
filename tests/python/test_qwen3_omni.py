"""Qwen3-Omni end to end: real espeak-ng speech (wav and flac), an image and a video in chat
records, prepared under the qwen3_omni template, the qwen3-omni audio and vision presets and
the Qwen3-Omni tokenizer `mmpt synth` writes, planned and loaded. Every loaded sample must
equal an independent reference (tests/python/qwen3_omni_ref.py, from transformers'
qwen3_omni_moe and the released config.json):
- each clip: <|audio_start|> (151669), as many <|audio_pad|> (151675) as
  _get_feat_extract_output_lengths gives for the clip's decoded samples padded to their own
  length, then <|audio_end|> (151670);
- images and videos between <|vision_start|> and <|vision_end|>, no system turn added;
- positions: a NumPy get_rope_index (audio consecutive, a video's time at 13 a second)."""

import json
import subprocess

import numpy as np
import pytest

import load_corpus
import mmpt
import qwen3_omni_ref as ref
import qwen3_vl_video_ref as video_ref


def speak(path, text, rate):
    """`text` spoken by espeak-ng, resampled by ffmpeg to `rate` Hz, as `path` (wav or flac)."""
    wav = str(path) + ".espeak.wav"
    subprocess.run(["espeak-ng", "-w", wav, text], check=True)
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", wav, "-ar", str(rate), str(path)],
                   check=True)


def conversations():
    def text(t):
        return {"type": "text", "text": t}

    def audio(name):
        return {"type": "audio", "audio": name}
    return [
        [{"role": "user", "content": [audio("a.wav"), text("What is said?")]},
         {"role": "assistant", "content": "A man riding a wave on a surfboard."}],
        # an image before a clip, and a system turn of the conversation's own
        [{"role": "system", "content": "Transcribe."},
         {"role": "user", "content": [{"type": "image", "image": "still.png"}, audio("b.flac")]},
         {"role": "assistant", "content": "Two dogs play in the snow."}],
        # two clips in one turn, a video between them (10 fps, 40 frames: 2 fps sampled
        # exactly, one second a temporal group)
        [{"role": "user", "content": [audio("c.wav"), text("and"),
                                      {"type": "video", "video": "clip.mp4"}, audio("a.wav")]},
         {"role": "assistant", "content": "A cat sleeps on a red couch."}],
    ]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    work = tmp_path_factory.mktemp("qwen3_omni")
    run = load_corpus.runner(work)
    # synth writes Qwen3-Omni's tokenizer beside any corpus with speech.
    report = json.loads(run("synth", "--profile", "audio", "--source", load_corpus.REAL_COCO,
                            "--samples", "1", "--out", "raw", "--json"))
    speak(work / "a.wav", "A man riding a wave on top of a surfboard.", 16000)
    speak(work / "b.flac", "Two dogs play in the snow.", 22050)
    speak(work / "c.wav", "A cat sleeps.", 44100)
    video_ref.make_video(work / "clip.mp4", "10", 40, 160, 96)
    from PIL import Image
    Image.new("RGB", (120, 90), (30, 160, 60)).save(work / "still.png")
    with open(work / "chat.jsonl", "w") as f:
        for k, messages in enumerate(conversations()):
            f.write(json.dumps({"id": f"q{k}", "messages": messages}) + "\n")
    run("prepare", "chat.jsonl", "--out", "ds", "--chat-template", "qwen3_omni",
        "--tokenizer", report["qwen3_omni_tokenizer"], "--audio", "qwen3-omni",
        "--vision", "qwen3-omni", "--on-error", "fail")
    return work


def test_synth_writes_qwen3_omni_tokenizer(dataset):
    tokenizer = mmpt.Tokenizer(str(dataset / "raw" / "audio.qwen3-omni.tokenizer.json"))
    ids = {"<|audio_start|>": ref.AUDIO_START, "<|audio_end|>": ref.AUDIO_END,
           "<|audio_pad|>": ref.AUDIO_PAD, "<|vision_start|>": ref.VISION_START,
           "<|vision_end|>": ref.VISION_END, "<|image_pad|>": ref.IMAGE_PAD,
           "<|video_pad|>": ref.VIDEO_PAD}
    for token, id_ in ids.items():
        assert tokenizer.token_to_id(token) == id_, token
    default = mmpt.Tokenizer(mmpt.default_tokenizer_path())
    text = "<think>A man riding a wave.</think>"
    assert list(tokenizer.encode(text)) == list(default.encode(text))


def clip_samples(path):
    """A clip's samples as the processor gets them: decoded to 16 kHz mono."""
    with open(path, "rb") as f:
        return len(mmpt.decode_audio(f.read()))


def test_loaded_samples_equal_the_reference(dataset):
    path = str(dataset / "ds")
    frames = {name: ref.valid_frames(clip_samples(dataset / name))
              for name in ("a.wav", "b.flac", "c.wav")}
    # Each conversation by its media kinds: its clips, in order.
    kinds = {("audio",): (0, ["a.wav"]), ("image", "audio"): (1, ["b.flac"]),
             ("audio", "video", "audio"): (2, ["c.wav", "a.wav"])}
    reader = mmpt.DatasetReader(path)
    default = mmpt.Tokenizer(mmpt.default_tokenizer_path())
    checked = set()
    for batch in load_corpus.load_batches(path, steps=2, seq_len=2048):
        tokens, positions = batch["tokens"], batch["position_ids"]
        cu, cu_padded = batch["cu_seqlens"], batch["cu_seqlens_padded"]
        images = iter(batch["image_grid_thw"])
        videos = iter(zip(batch["video_grid_thw"], batch["second_per_grid_ts"]))
        for s, index in enumerate(batch["sample_index"]):
            begin = int(cu_padded[s])
            ids = tokens[begin:begin + int(cu[s + 1] - cu[s])]
            media = reader.sample_meta(int(index))["media"]
            k, names = kinds[tuple(item["kind"] for item in media)]
            clips = [frames[name] for name in names]
            starts = np.flatnonzero(ids == ref.AUDIO_START)
            assert len(starts) == len(clips)
            for start, clip in zip(starts, clips):
                count = ref.audio_tokens(clip)
                assert (ids[start + 1:start + 1 + count] == ref.AUDIO_PAD).all()
                assert ids[start + 1 + count] == ref.AUDIO_END
            assert (ids == ref.AUDIO_PAD).sum() == sum(ref.audio_tokens(c) for c in clips)
            # No default system turn: a conversation starts with its own first turn.
            first_role = "system" if k == 1 else "user"
            assert default.decode([int(i) for i in ids[:3]]) == f"<|im_start|>{first_role}\n"
            after_start = ids[np.flatnonzero(ids == ref.VISION_START) + 1]
            grids = [tuple(next(images)) for _ in range(int((after_start == ref.IMAGE_PAD).sum()))]
            video = [next(videos) for _ in range(int((after_start == ref.VIDEO_PAD).sum()))]
            want = ref.rope_index(ids, image_grids=grids,
                                  video_grids=[tuple(g) for g, _ in video], audio_frames=clips,
                                  second_per_grids=[float(t) for _, t in video])
            assert (want == np.round(want)).all()  # whole positions: comparable with int32
            np.testing.assert_array_equal(positions[:, begin:begin + len(ids)], want)
            checked.add(k)
    assert checked == {0, 1, 2}


def test_the_plan_costs_the_qwen3_omni_audio_tower(dataset):
    run = load_corpus.runner(dataset)
    plan = json.loads(run("plan", "ds", "--seq-len", "4096", "--allow-repeat", "--json"))
    assert plan["mmpt"]["audio_seconds"] > 0
    source = json.loads(run("inspect", "ds", "--json"))["sources"][0]
    # 13 tokens a second of speech, each clip counted from its whole hops.
    assert source["audios"]["total"] == 4
    seconds = source["audio_duration_ms"]["total"] / 1000
    assert abs(source["audio_tokens"]["total"] - 13 * seconds) <= 4 * 2
