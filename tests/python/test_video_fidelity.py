"""Video fidelity: mmpt's PreprocessVideo against an independent reference written for the
tests (video_ref.py: PyAV decode, qwen-vl-utils' sampling rule, Pillow's BICUBIC, NumPy
normalize and patchify as Hugging Face's Qwen2VLImageProcessor does). mmpt's side is the test
binary mmpt_video_dump (tests/media/video_dump.cc) and mmpt.preprocess_video. Same frame indices
and grid; mean absolute difference of the frames and of the pixel values at most 1/255 of the
pixel range.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("av")
from video_ref import PATCH, STD, TEMPORAL, reference  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DUMP = os.path.join(ROOT, "build", os.environ.get("MMPT_PRESET", "release"), "mmpt_video_dump")


VIDEOS = {
    # name: ffmpeg arguments (a moving test pattern; B-frames and short GOPs make seeks real)
    "h264_bframes.mp4": "-f lavfi -i testsrc2=size=320x240:rate=25:duration=4 "
                        "-c:v libx264 -g 12 -bf 2 -pix_fmt yuv420p",
    "h264_720p.mp4": "-f lavfi -i testsrc2=size=1280x720:rate=30:duration=2 "
                     "-c:v libx264 -g 15 -pix_fmt yuv420p",
    "vp9.webm": "-f lavfi -i testsrc2=size=176x144:rate=30:duration=3 "
                "-c:v libvpx-vp9 -g 10 -deadline realtime -cpu-used 8",
    "mjpeg.avi": "-f lavfi -i testsrc2=size=160x120:rate=10:duration=3 -c:v mjpeg",
    # A width that is no multiple of libswscale's vectors (a real COCO photo's 350 px).
    "h264_350x500.mp4": "-f lavfi -i testsrc2=size=350x500:rate=30:duration=2 "
                        "-c:v libx264 -pix_fmt yuv420p",
}


def make_video(tmp_path, name):
    """VIDEOS[name] written by the ffmpeg CLI into tmp_path; its path."""
    if shutil.which("ffmpeg") is None:
        pytest.skip("the ffmpeg CLI is not installed")
    path = str(tmp_path / name)
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-loglevel", "error", *VIDEOS[name].split(), path],
                   check=True)
    return path


@pytest.mark.parametrize("name", sorted(VIDEOS))
def test_video_matches_pyav_pillow_reference(tmp_path, name):
    if not os.path.exists(DUMP):
        pytest.skip(f"{DUMP} is not built")
    path = make_video(tmp_path, name)
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


def test_python_binding_gives_the_reference_grid_and_pixels(tmp_path):
    mmpt = pytest.importorskip("mmpt")
    path = make_video(tmp_path, "h264_bframes.mp4")
    with open(path, "rb") as f:
        out = mmpt.preprocess_video(f.read())
    ref = reference(path)
    assert out["frame_indices"] == ref["frame_indices"]
    assert out["total_frames"] == ref["total_frames"]
    assert list(out["video_grid_thw"]) == ref["grid_thw"]
    assert out["second_per_grid_ts"] == pytest.approx(ref["second_per_grid_t"], rel=1e-12)
    assert out["pixel_values_videos"].shape == ref["pixel_values"].shape
    std = np.repeat(STD, TEMPORAL * PATCH * PATCH)
    assert (np.abs(out["pixel_values_videos"] - ref["pixel_values"]) * std).mean() <= 1 / 255
    with pytest.raises(mmpt.InvalidArgumentError):
        mmpt.preprocess_video(b"not a video")


def test_odd_widths_convert_without_overrunning_the_frame(tmp_path):
    """libswscale writes whole vectors past a row's end: converting straight into a tight RGB
    buffer corrupted the heap at 350 px, which glibc's checks (MALLOC_CHECK_=3) catch on the
    allocations that follow, in a process of its own."""
    path = make_video(tmp_path, "h264_350x500.mp4")
    script = ("import mmpt, sys\n"
              "data = open(sys.argv[1], 'rb').read()\n"
              "for _ in range(3):\n"
              "    out = mmpt.preprocess_video(data)\n"
              "print(list(out['video_grid_thw']))\n")
    done = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True,
                          env={**os.environ, "MALLOC_CHECK_": "3"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[2, 36, 24]"


@pytest.mark.slow
def test_bench_runs_at_a_tiny_size():
    """bench/video_bench.py checks both sides agree, then prints both rates and their ratio."""
    if shutil.which("ffmpeg") is None:
        pytest.skip("the ffmpeg CLI is not installed")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "video_bench.py"),
                           "--seconds", "2", "--repeats", "1"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), timeout=300)
    assert done.returncode == 0, done.stdout
    rows = re.findall(r"^(sampled frames/s|video seconds/s)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x$",
                      done.stdout, re.M)
    assert [row[0] for row in rows] == ["sampled frames/s", "video seconds/s"], done.stdout
    assert all(float(value) > 0 for row in rows for value in row[1:]), rows
