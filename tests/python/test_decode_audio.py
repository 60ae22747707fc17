"""mmpt.decode_audio equals the mean over the channels of what the ffmpeg CLI writes for `-ar
16000 -f f32le` (every channel kept), the down-mix librosa.load(mono=True) does, so features
computed from it equal features of the reference pipeline; bad files raise mmpt's errors."""

import shutil
import subprocess

import numpy as np
import pytest

import mmpt

pytestmark = [
    pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg CLI not installed"),
]

FFMPEG = ["ffmpeg", "-nostdin", "-y", "-loglevel", "error"]


def _make(path, args):
    subprocess.run(FFMPEG + args + [str(path)], check=True)
    return path.read_bytes()


def _reference(path, rate, channels):
    out = subprocess.run(FFMPEG + ["-i", str(path), "-ar", str(rate), "-f", "f32le", "-"],
                         check=True, capture_output=True).stdout
    frames = np.frombuffer(out, dtype=np.float32).reshape(-1, channels)
    return frames.astype(np.float64).mean(axis=1).astype(np.float32)


@pytest.mark.parametrize("name,channels,args", [
    ("tone.wav", 2, ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=1.2",
                     "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=44100:duration=1.2",
                     "-filter_complex", "amerge=inputs=2"]),
    ("tone.mp3", 1, ["-f", "lavfi", "-i", "sine=frequency=330:sample_rate=22050:duration=1.2",
                     "-c:a", "libmp3lame"]),
])
def test_equals_the_channel_mean_and_feeds_log_mel(tmp_path, name, channels, args):
    path = tmp_path / name
    data = _make(path, args)
    pcm = mmpt.decode_audio(data)
    expected = _reference(path, 16000, channels)
    assert pcm.dtype == np.float32 and pcm.shape == expected.shape
    assert np.max(np.abs(pcm - expected)) < 1e-5
    assert np.max(np.abs(expected)) > 0.05  # an audible tone, so the comparison means something
    ours = mmpt.log_mel(pcm, audio="whisper-large-v2")["input_features"]
    theirs = mmpt.log_mel(expected, audio="whisper-large-v2")["input_features"]
    assert np.max(np.abs(ours - theirs)) < 1e-4
    assert mmpt.decode_audio(data, sample_rate=8000).shape == _reference(path, 8000, channels).shape


def test_bad_files_raise(tmp_path):
    with pytest.raises(mmpt.InvalidArgumentError):
        mmpt.decode_audio(b"not audio at all")
    data = _make(tmp_path / "z.wav", ["-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", "0"])
    with pytest.raises(mmpt.CorruptError, match="zero length"):
        mmpt.decode_audio(data)
