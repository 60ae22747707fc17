"""Video fidelity: mmpt's PreprocessVideo against an independent reference written here.

The reference decodes with PyAV (Debian's python3-av), follows qwen-vl-utils' sampling rule
(smart_nframes, round(torch.linspace), the per-frame pixel budget of fetch_video; Qwen2.5-VL's
defaults), resizes with Pillow's BICUBIC and normalizes and patchifies with NumPy as
Hugging Face's Qwen2VLImageProcessor does. mmpt's side is the test binary mmpt_video_dump
(tests/media/video_dump.cc). Same frame indices and grid; mean absolute difference of the
frames and of the pixel values at most 1/255 of the pixel range.
"""

import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "media"))
from hf_image_reference import smart_resize  # noqa: E402  (qwen-vl-utils' rule, one copy)

av = pytest.importorskip("av")
Image = pytest.importorskip("PIL.Image")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DUMP = os.path.join(ROOT, "build", os.environ.get("MMPT_PRESET", "release"), "mmpt_video_dump")

# qwen-vl-utils (Qwen2.5-VL) constants.
FRAME_FACTOR, FPS, FPS_MIN_FRAMES, FPS_MAX_FRAMES = 2, 2.0, 4, 768
VIDEO_MIN_PIXELS, VIDEO_MAX_PIXELS = 128 * 28 * 28, 768 * 28 * 28
VIDEO_TOTAL_PIXELS = int(128000 * 28 * 28 * 0.9)
MEAN = np.array([0.48145466, 0.4578275, 0.40821073], dtype=np.float32)
STD = np.array([0.26862954, 0.26130258, 0.27577711], dtype=np.float32)
PATCH, MERGE, TEMPORAL = 14, 2, 2


def nframes_for(total_frames, video_fps):
    lo = math.ceil(FPS_MIN_FRAMES / FRAME_FACTOR) * FRAME_FACTOR
    hi = math.floor(min(FPS_MAX_FRAMES, total_frames) / FRAME_FACTOR) * FRAME_FACTOR
    n = min(max(total_frames / video_fps * FPS, lo), hi, total_frames)
    n = math.floor(n / FRAME_FACTOR) * FRAME_FACTOR
    assert FRAME_FACTOR <= n <= total_frames
    return n


def sample_indices(total_frames, n):
    try:
        import torch  # qwen-vl-utils' own way: float32 linspace, round half to even
        return torch.linspace(0, total_frames - 1, n).round().long().tolist()
    except ImportError:
        return np.round(np.linspace(0, total_frames - 1, n)).astype(int).tolist()


def reference(path):
    with av.open(path) as container:
        stream = container.streams.video[0]
        video_fps = float(stream.average_rate)
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
    total = len(frames)
    n = nframes_for(total, video_fps)
    idx = sample_indices(total, n)
    sampled = np.stack([frames[i] for i in idx])
    height, width = sampled.shape[1:3]
    max_pixels = max(min(VIDEO_MAX_PIXELS, VIDEO_TOTAL_PIXELS / n * FRAME_FACTOR),
                     int(VIDEO_MIN_PIXELS * 1.05))
    rh, rw = smart_resize(height, width, min_pixels=VIDEO_MIN_PIXELS, max_pixels=max_pixels)
    resized = np.stack([np.asarray(Image.fromarray(f).resize((rw, rh), Image.BICUBIC))
                        for f in sampled])
    x = (resized.astype(np.float32) * np.float32(1 / 255) - MEAN) / STD  # T, H, W, C
    x = x.transpose(0, 3, 1, 2)  # T, C, H, W
    gt, gh, gw = n // TEMPORAL, rh // PATCH, rw // PATCH
    x = x.reshape(gt, TEMPORAL, 3, gh // MERGE, MERGE, PATCH, gw // MERGE, MERGE, PATCH)
    x = x.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    pixel_values = x.reshape(gt * gh * gw, 3 * TEMPORAL * PATCH * PATCH)
    sample_fps = n / max(total, 1e-6) * video_fps
    return dict(total_frames=total, frame_indices=idx, frames=sampled, grid_thw=[gt, gh, gw],
                pixel_values=pixel_values, second_per_grid_t=TEMPORAL / sample_fps,
                height=rh, width=rw)


VIDEOS = {
    # name: ffmpeg arguments (a moving test pattern; B-frames and short GOPs make seeks real)
    "h264_bframes.mp4": "-f lavfi -i testsrc2=size=320x240:rate=25:duration=4 "
                        "-c:v libx264 -g 12 -bf 2 -pix_fmt yuv420p",
    "h264_720p.mp4": "-f lavfi -i testsrc2=size=1280x720:rate=30:duration=2 "
                     "-c:v libx264 -g 15 -pix_fmt yuv420p",
    "vp9.webm": "-f lavfi -i testsrc2=size=176x144:rate=30:duration=3 "
                "-c:v libvpx-vp9 -g 10 -deadline realtime -cpu-used 8",
    "mjpeg.avi": "-f lavfi -i testsrc2=size=160x120:rate=10:duration=3 -c:v mjpeg",
}


@pytest.mark.parametrize("name", sorted(VIDEOS))
def test_video_matches_pyav_pillow_reference(tmp_path, name):
    if not os.path.exists(DUMP):
        pytest.skip(f"{DUMP} is not built")
    if shutil.which("ffmpeg") is None:
        pytest.skip("the ffmpeg CLI is not installed")
    path = str(tmp_path / name)
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-loglevel", "error", *VIDEOS[name].split(), path],
                   check=True)
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run([DUMP, path, str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    meta = json.loads((out / "meta.json").read_text())
    ref = reference(path)

    assert meta["total_frames"] == ref["total_frames"]
    assert meta["frame_indices"] == ref["frame_indices"]
    assert meta["grid_thw"] == ref["grid_thw"]
    assert (meta["height"], meta["width"]) == (ref["height"], ref["width"])
    assert meta["second_per_grid_t"] == pytest.approx(ref["second_per_grid_t"], rel=1e-12)

    frames = np.load(out / "frames.npy")
    assert frames.shape == ref["frames"].shape
    frame_mad = np.abs(frames.astype(np.float64) - ref["frames"]).mean() / 255
    assert frame_mad <= 1 / 255, frame_mad

    pixel_values = np.load(out / "pixel_values.npy")
    assert pixel_values.shape == ref["pixel_values"].shape == (np.prod(ref["grid_thw"]), 1176)
    # Back to the pixel range: |Δ normalized| · std is |Δ value| / 255.
    std = np.repeat(STD, TEMPORAL * PATCH * PATCH)
    value_mad = (np.abs(pixel_values.astype(np.float64) - ref["pixel_values"]) * std).mean()
    assert value_mad <= 1 / 255, value_mad
    # The frames sampled are distinct: a shifted index would not pass the checks above.
    assert not np.array_equal(ref["frames"][0], ref["frames"][1])
