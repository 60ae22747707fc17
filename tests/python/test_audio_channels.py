"""Multichannel clips in the formats users bring (stereo and 5.1 in mp3, m4a/aac, opus and wav,
made here by ffmpeg with a different tone on every channel), each checked against an
independent reference: ffmpeg's decode at 16 kHz keeping every channel, averaged over the
channels in NumPy (librosa.load(mono=True)'s down-mix). mmpt decodes each clip to that mean and
to its length; prepare records that length, not the container's (an mp3's or an AAC's declared
duration holds encoder padding); and the plan and the loader give each clip the <|AUDIO|>
tokens Hugging Face's Qwen2.5-Omni processor gives for those samples."""

import glob
import json
import shutil
import struct
import subprocess

import numpy as np
import pytest

import load_corpus
import mmpt
import whisper_ref

pytestmark = [
    pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg CLI not installed"),
]

FFMPEG = ["ffmpeg", "-nostdin", "-y", "-loglevel", "error"]
AUDIO_PAD = 151646  # <|AUDIO|> in the Qwen2.5-Omni tokenizer

# (file, channels, source rate, seconds, codec): lengths that are not whole 10 ms hops.
CLIPS = [
    ("stereo.mp3", 2, 44100, 1.37, "libmp3lame"),
    ("stereo.m4a", 2, 44100, 1.13, "aac"),
    ("surround.m4a", 6, 48000, 1.21, "aac"),
    ("stereo.opus", 2, 48000, 1.07, "libopus"),
    ("surround.opus", 6, 48000, 1.29, "libopus"),
    ("stereo.wav", 2, 22050, 1.03, "pcm_s16le"),
    ("surround.wav", 6, 44100, 1.17, "pcm_f32le"),
]


def _make(path, channels, rate, seconds, codec):
    tones = []
    for c in range(channels):
        tones += ["-f", "lavfi", "-i",
                  f"sine=frequency={300 + 170 * c}:sample_rate={rate}:duration={seconds}"]
    subprocess.run(FFMPEG + tones + ["-filter_complex", f"amerge=inputs={channels}",
                                     "-c:a", codec, str(path)], check=True)


def _channel_mean(path, channels):
    raw = subprocess.run(FFMPEG + ["-i", str(path), "-ar", "16000", "-f", "f32le", "-"],
                         check=True, capture_output=True).stdout
    frames = np.frombuffer(raw, dtype=np.float32).reshape(-1, channels)
    return frames.astype(np.float64).mean(axis=1)


def _reference_tokens(samples):
    # Qwen2.5-Omni's processor: the clip padded to the 300 s window, a frame valid when its
    # first sample (t * 160) is audio, then the stride-2 convolution and the pooling by 2.
    return whisper_ref.audio_tokens(-(-samples // 160))


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    work = tmp_path_factory.mktemp("audio_channels")
    (work / "clips").mkdir()
    out = {}
    for name, channels, rate, seconds, codec in CLIPS:
        path = work / "clips" / name
        _make(path, channels, rate, seconds, codec)
        out[name] = (path, _channel_mean(path, channels))
    return work, out


@pytest.mark.parametrize("name", [c[0] for c in CLIPS])
def test_decoding_gives_the_channel_mean_and_its_length(clips, name):
    _, made = clips
    path, want = made[name]
    got = mmpt.decode_audio(path.read_bytes())
    assert got.shape == want.shape  # the decoded length, priming and padding removed
    assert np.max(np.abs(got - want)) < 1e-5
    assert np.max(np.abs(want)) > 0.05  # an audible mix, so the comparison means something


def test_prepare_plan_and_load_count_the_decoded_samples(clips):
    work, made = clips
    run = load_corpus.runner(work)
    run("synth", "--profile", "audio", "--source", load_corpus.REAL_COCO, "--samples", "1",
        "--out", "raw")  # for Qwen2.5-Omni's tokenizer
    with open(work / "clips.jsonl", "w") as f:
        for i, (name, *_rest) in enumerate(CLIPS):
            f.write(json.dumps({"id": f"c{i}", "audio": f"clips/{name}", "conversations": [
                {"from": "human", "value": "<audio>\nWhat do you hear?"},
                {"from": "gpt", "value": "Tones."}]}) + "\n")
    run("prepare", "clips.jsonl", "--out", "ds", "--chat-template", "qwen_omni",
        "--tokenizer", "raw/audio.tokenizer.json")
    path = str(work / "ds")

    # Prepare records each clip's decoded length, which an mp3's header overstates.
    reader = mmpt.DatasetReader(path)
    names = [json.loads(reader.line(i))["media"][0]["path"].split("/")[-1]
             for i in range(len(CLIPS))]
    want = {}  # sample index -> reference sample count
    for i, name in enumerate(names):
        item = reader.sample_meta(i)["media"][0]
        want[i] = len(made[name][1])
        assert item["frames"] == want[i], name
    probed = json.loads(subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "json",
         str(made["stereo.mp3"][0])], check=True, capture_output=True).stdout)
    mp3 = want[names.index("stereo.mp3")]
    assert float(probed["format"]["duration"]) * 16000 - mp3 > 160  # a hop too many

    # The plan's tokens (inspect costs the .meta as the planner does) are the reference's.
    source = json.loads(run("inspect", "ds", "--json"))["sources"][0]
    assert source["audio_tokens"]["total"] == sum(_reference_tokens(n) for n in want.values())

    # The loader's: every clip's <|AUDIO|> run and feature mask.
    seen = set()
    for batch in load_corpus.load_batches(path, steps=1, seq_len=4096):
        cu, cu_padded = batch["cu_seqlens"], batch["cu_seqlens_padded"]
        mask = batch["feature_attention_mask"]
        for s, index in enumerate(batch["sample_index"]):
            begin = int(cu_padded[s])
            ids = batch["tokens"][begin:begin + int(cu[s + 1] - cu[s])]
            samples = want[int(index)]
            assert int((ids == AUDIO_PAD).sum()) == _reference_tokens(samples)
            assert int(mask[s].sum()) == -(-samples // 160)
            seen.add(int(index))
    assert seen == set(want)

    # A recorded length the clip does not decode to is refused, naming the sample.
    shutil.copytree(path, work / "changed")
    (meta,) = glob.glob(str(work / "changed" / "**" / "*.meta"), recursive=True)
    data = bytearray(open(meta, "rb").read())
    num_samples = struct.unpack_from("<Q", data, 32)[0]
    frames_at = 64 + 24 * num_samples + 32  # the first media record's `frames`
    struct.pack_into("<I", data, frames_at, want[0] + 1)
    open(meta, "wb").write(bytes(data))
    # The planning table holds the recorded length too: written again from the changed .meta,
    # as `mmpt index` converts a dataset whose manifest names none.
    manifest_path = work / "changed" / "mmpt.json"
    manifest = json.loads(manifest_path.read_text())
    del manifest["planning"]
    manifest_path.write_text(json.dumps(manifest))
    (work / "changed" / "mmpt.plan").unlink()
    subprocess.run([load_corpus.MMPT, "index", str(work / "changed")], check=True)
    with pytest.raises(mmpt.CorruptError, match=f"decodes to {want[0]} samples .* prepare "
                                                f"recorded {want[0] + 1}") as error:
        load_corpus.load_batches(str(work / "changed"), steps=1, seq_len=4096)
    assert "c0" in str(error.value), error.value
