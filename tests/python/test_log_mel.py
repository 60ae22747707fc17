"""mmpt.log_mel equals an independent NumPy implementation of Whisper's feature extractor
(whisper_ref.py) within 1e-4, on speech-like and edge-case signals: 80 and 128 bins, 30 s and
300 s windows; and Hugging Face's own WhisperFeatureExtractor (@huggingface/transformers, run by
tests/media/reference_whisper_features.js) on a few of them."""

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import mmpt
import whisper_ref
from speech_like import RATE, vowels

pytestmark = pytest.mark.skipif(not hasattr(mmpt, "log_mel"), reason="media module not built")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HF_REFERENCE = os.path.join(ROOT, "tests", "media", "reference_whisper_features.js")
HF_PACKAGE = os.path.join(ROOT, "third_party", "npm", "node_modules", "@huggingface",
                          "transformers")

# bins, seconds
PRESETS = {"whisper-large-v2": (80, 30), "qwen2-audio": (128, 30), "qwen2.5-omni": (128, 300)}
TOLERANCE = 1e-4


def _signals():
    rng = np.random.default_rng(14)
    t = np.arange(int(7.3 * RATE)) / RATE
    return {
        "sine_440": 0.5 * np.sin(2 * np.pi * 440 * t),
        "chirp": 0.3 * np.sin(2 * np.pi * (100 * t + (7000 - 100) / (2 * 7.3) * t**2)),
        "noise": 0.1 * rng.standard_normal(t.size),
        "quiet_noise": 1e-4 * rng.standard_normal(t.size),
        "silence": np.zeros(RATE),
        "one_hop_and_a_sample": 0.2 * rng.standard_normal(161),
        "vowels_half_second": vowels(0.5, rng),
        "vowels_12s": vowels(12, rng),
        "vowels_30s": vowels(30, rng),
        "vowels_41s": vowels(41, rng),
    }


SIGNALS = _signals()


# Every signal at 80 and 128 bins; Qwen2.5-Omni's 300 s window (ten times the work) on two.
CASES = [(name, preset) for name in SIGNALS for preset in ("whisper-large-v2", "qwen2-audio")] + [
    ("vowels_half_second", "qwen2.5-omni"), ("vowels_41s", "qwen2.5-omni")]


@pytest.mark.parametrize("name,preset", CASES)
def test_log_mel_matches_numpy_reference(name, preset):
    pcm = SIGNALS[name].astype(np.float32)
    n_mels, window_seconds = PRESETS[preset]
    got = mmpt.log_mel(pcm, audio=preset)
    want, want_mask, want_tokens = whisper_ref.log_mel(pcm, n_mels=n_mels,
                                                       chunk_seconds=window_seconds)

    assert got["input_features"].dtype == np.float32
    assert got["input_features"].shape == (n_mels, window_seconds * 100)  # 10 ms frames
    np.testing.assert_allclose(got["input_features"], want, rtol=0, atol=TOLERANCE)
    np.testing.assert_array_equal(got["attention_mask"], want_mask)
    assert got["tokens"] == want_tokens


@pytest.mark.skipif(not (shutil.which("node") and os.path.isdir(HF_PACKAGE)),
                    reason="node or @huggingface/transformers missing (scripts/install-deps.sh)")
@pytest.mark.parametrize("name,preset", [("chirp", "whisper-large-v2"),
                                         ("vowels_12s", "whisper-large-v2"),
                                         ("quiet_noise", "qwen2-audio"),
                                         ("vowels_41s", "qwen2-audio")])
def test_log_mel_matches_hugging_face(name, preset, tmp_path):
    pcm = SIGNALS[name].astype(np.float32)
    n_mels, window_seconds = PRESETS[preset]
    pcm.tofile(tmp_path / "pcm.f32")
    subprocess.run(["node", HF_REFERENCE, str(n_mels), str(window_seconds),
                    str(tmp_path / "pcm.f32"), str(tmp_path / "features.f32")],
                   check=True, capture_output=True, timeout=120)
    want = np.fromfile(tmp_path / "features.f32", dtype=np.float32)
    got = mmpt.log_mel(pcm, audio=preset)["input_features"]
    np.testing.assert_allclose(got, want.reshape(got.shape), rtol=0, atol=TOLERANCE)


def test_mask_and_tokens_by_length():
    # 1 s → 100 frames → 50 after the conv → 25 tokens; ≥ 30 s → 3000 → 750 (the window).
    # Qwen2.5-Omni's 300 s window keeps all 41 s: 4100 frames → 2050 → 1025 tokens.
    for preset, seconds, frames, tokens in [("qwen2-audio", 1, 100, 25),
                                            ("qwen2-audio", 30, 3000, 750),
                                            ("qwen2-audio", 41, 3000, 750),
                                            ("qwen2.5-omni", 41, 4100, 1025)]:
        pcm = SIGNALS["vowels_41s"][: seconds * RATE].astype(np.float32)
        got = mmpt.log_mel(pcm, audio=preset)
        assert int(got["attention_mask"].sum()) == frames
        assert got["tokens"] == tokens


def test_kept_frames_equal_the_whole_window():
    # A batch keeps a clip's frames of Qwen2.5-Omni's 300 s window, not all 30,000; they must be
    # the whole window's, whose floor (the maximum − 8) a loud last sample sets: its nearest
    # frame starts past the clip and is computed though not kept.
    pcm = (SIGNALS["vowels_41s"][: 2 * RATE + 151] * 1e-4).astype(np.float32)
    pcm[-1] = 0.9
    whole = mmpt.log_mel(pcm, audio="qwen2.5-omni")
    valid = int(whole["attention_mask"].sum())
    assert int(np.argmax(whole["input_features"]) % whole["input_features"].shape[1]) == valid
    for frames in (valid, valid + 5, 7):
        kept = mmpt.log_mel(pcm, audio="qwen2.5-omni", frames=frames)
        assert kept["input_features"].shape == (128, frames)
        np.testing.assert_array_equal(kept["input_features"],
                                      whole["input_features"][:, :frames])
        np.testing.assert_array_equal(kept["attention_mask"], whole["attention_mask"][:frames])
    with pytest.raises(mmpt.InvalidArgumentError, match="mask entries"):
        mmpt.log_mel(pcm, audio="qwen2.5-omni", frames=30001)


@pytest.mark.parametrize("samples", [170, RATE * 2 + 17, RATE * 2 + 39, RATE * 2 + 40,
                                     RATE * 3])
def test_qwen3_omni_pads_each_clip_to_itself(samples):
    # Its processor pads a clip to its own length: the STFT reflects at the clip's end (the last
    # frame differs from the window's zeros when samples mod 160 < 40, 200 past the frame's
    # start), and the floor is the maximum over ⌊samples / 160⌋ frames alone.
    rng = np.random.default_rng(samples)
    pcm = vowels(samples / RATE + 0.1, rng)[:samples].astype(np.float32)
    pcm[-1] = 0.9  # a loud last sample, past the last frame's start
    want, want_mask, _ = whisper_ref.log_mel(pcm, chunk_seconds=300, to_clip=True)
    valid = samples // 160
    assert want.shape == (128, valid) and want_mask.sum() == valid
    got = mmpt.log_mel(pcm, audio="qwen3-omni", frames=valid + 3)
    np.testing.assert_allclose(got["input_features"][:, :valid], want, rtol=0, atol=TOLERANCE)
    np.testing.assert_array_equal(got["attention_mask"][:valid], want_mask)
    assert got["attention_mask"][valid:].sum() == 0
    np.testing.assert_array_equal(got["input_features"][:, valid:],
                                  np.full((128, 3), got["input_features"].min()))


@pytest.mark.parametrize("preset", ["whisper-large-v2", "qwen2-audio"])
def test_filter_bank_matches_reference(preset):
    want = whisper_ref.mel_filter_bank(PRESETS[preset][0])
    np.testing.assert_allclose(mmpt.mel_filters(preset), want, rtol=1e-12, atol=1e-15)


def test_audio_tokens_match_processor_formula():
    for frames in range(0, 3001):
        assert mmpt.audio_tokens(frames) == whisper_ref.audio_tokens(frames), frames


def test_errors_name_the_problem():
    with pytest.raises(mmpt.InvalidArgumentError, match="no samples"):
        mmpt.log_mel(np.zeros(0, dtype=np.float32))
    pcm = np.zeros(500, dtype=np.float32)
    pcm[321] = np.inf
    with pytest.raises(mmpt.InvalidArgumentError, match="sample 321"):
        mmpt.log_mel(pcm)
    with pytest.raises(mmpt.NotFoundError, match="wav2vec"):
        mmpt.log_mel(pcm, audio="wav2vec")


@pytest.mark.slow
def test_bench_runs_at_a_tiny_size():
    """bench/log_mel_bench.py prints both figures and their ratio for every preset."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "log_mel_bench.py"),
                           "--lengths", "1", "--clips", "1", "--repeats", "1"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), timeout=300)
    assert done.returncode == 0, done.stdout
    rows = re.findall(r"^(\S+)\s+1 \|\s+(\d+)\s+(\d+)\s+([\d.]+)x$", done.stdout, re.M)
    assert [row[0] for row in rows] == ["whisper-large-v2", "qwen2-audio"], done.stdout
    for row in rows:
        assert all(float(value) > 0 for value in row[1:]), row
    # Qwen2.5-Omni's per-clip cost, the whole 300 s window beside the kept frames.
    omni = re.findall(r"^qwen2.5-omni\s+1 \|\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x$", done.stdout,
                      re.M)
    assert len(omni) == 1 and all(float(value) > 0 for value in omni[0]), done.stdout


def test_the_default_preset_is_the_default_audio_encoders_front_end():
    """One default: mmpt.log_mel without a preset computes what `mmpt prepare` (whose default
    audio encoder is cost::Defaults::kAudio, qwen2.5-omni: a 300 s window) feeds the encoder."""
    pcm = np.zeros(16000, dtype=np.float32)
    pcm[::100] = 0.5
    default = mmpt.log_mel(pcm)
    omni = mmpt.log_mel(pcm, audio="qwen2.5-omni")
    assert default["input_features"].shape == omni["input_features"].shape == (128, 30000)
    np.testing.assert_array_equal(default["input_features"], omni["input_features"])
