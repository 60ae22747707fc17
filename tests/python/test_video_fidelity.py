"""Video fidelity: mmpt's PreprocessVideo against an independent reference written for the
tests (video_ref.py: PyAV decode, or the ffmpeg CLI's autorotated one for rotated videos;
qwen-vl-utils' sampling rule; torchvision's F.resize(BICUBIC, antialias=True) as fetch_video
calls it, or Pillow's BICUBIC for mmpt's other rule; NumPy normalize and patchify as Hugging
Face's Qwen2VLImageProcessor does). mmpt's side is the test binary mmpt_video_dump
(tests/media/video_dump.cc) and mmpt.preprocess_video. Same frame indices, grid and decoded
frames; the resized frames within one level of torchvision's (Pillow's: equal).
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
from video_ref import PATCH, STD, TEMPORAL, reference, resize_frames, unpatchify  # noqa: E402

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


def make_video(tmp_path, name, args=None):
    """VIDEOS[name] (or `args`) written by the ffmpeg CLI into tmp_path; its path."""
    if shutil.which("ffmpeg") is None:
        pytest.skip("the ffmpeg CLI is not installed")
    path = str(tmp_path / name)
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-loglevel", "error",
                    *(args or VIDEOS[name]).split(), path], check=True)
    return path


def dump(tmp_path, path, rule=None):
    """mmpt_video_dump's meta, decoded frames and resized frames (from its pixel values)."""
    if not os.path.exists(DUMP):
        pytest.skip(f"{DUMP} is not built")
    out = tmp_path / ("out_" + os.path.basename(path) + (rule or ""))
    out.mkdir()
    done = subprocess.run([DUMP, path, str(out), *([rule] if rule else [])], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    meta = json.loads((out / "meta.json").read_text())
    pixel_values = np.load(out / "pixel_values.npy")
    return meta, np.load(out / "frames.npy"), pixel_values


def assert_within_one_level(resized, want):
    """torchvision's float arithmetic is not reproduced to the last bit (resize.h): a value on
    a rounding boundary may land one level off. Measured: at most 0.07% of values."""
    diff = np.abs(resized.astype(int) - want)
    assert diff.max() <= 1 and (diff > 0).mean() < 0.002, (diff.max(), (diff > 0).mean())


@pytest.mark.parametrize("name", sorted(VIDEOS))
def test_video_matches_the_qwen_vl_utils_reference(tmp_path, name):
    pytest.importorskip("torchvision")
    path = make_video(tmp_path, name)
    meta, frames, pixel_values = dump(tmp_path, path)
    ref = reference(path)

    assert meta["total_frames"] == ref["total_frames"]
    assert meta["frame_indices"] == ref["frame_indices"]
    assert meta["grid_thw"] == ref["grid_thw"]
    assert (meta["height"], meta["width"]) == (ref["height"], ref["width"])
    assert meta["second_per_grid_t"] == pytest.approx(ref["second_per_grid_t"], rel=1e-12)
    np.testing.assert_array_equal(frames, ref["frames"])  # libswscale both sides
    assert pixel_values.shape == ref["pixel_values"].shape == (np.prod(ref["grid_thw"]), 1176)
    # Down-scales (1280x720, 320x240, 350x500) and up-scales (176x144, 160x120 to >= 128 tokens).
    assert_within_one_level(unpatchify(pixel_values, meta["grid_thw"]), ref["resized"])
    # Back to the pixel range: |Δ normalized| · std is |Δ value| / 255.
    std = np.repeat(STD, TEMPORAL * PATCH * PATCH)
    value_mad = (np.abs(pixel_values.astype(np.float64) - ref["pixel_values"]) * std).mean()
    assert value_mad <= 0.01 / 255, value_mad
    # The frames sampled are distinct: a shifted index would not pass the checks above.
    assert not np.array_equal(ref["frames"][0], ref["frames"][1])


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "vp9.webm"])
def test_the_pillow_rule_equals_pillow(tmp_path, name):
    path = make_video(tmp_path, name)
    meta, frames, pixel_values = dump(tmp_path, path, "pillow")
    want = resize_frames(frames, meta["height"], meta["width"], "pillow")
    np.testing.assert_array_equal(unpatchify(pixel_values, meta["grid_thw"]), want)
    # The rules differ: the test tells them apart.
    _, _, torch_values = dump(tmp_path, path, "torchvision")
    assert not np.array_equal(torch_values, pixel_values)


# A phone's portrait clip: 64x48 coded, a display matrix from the mp4 "rotate" tag (this ffmpeg
# writes a tag of R as a turn of R degrees counterclockwise).
ROTATED_SOURCE = "-f lavfi -i testsrc2=size=64x48:rate=10:duration=1 -c:v libx264 -pix_fmt yuv420p"


def make_rotated(tmp_path, degrees):
    source = make_video(tmp_path, "coded.mp4", ROTATED_SOURCE)
    return make_video(tmp_path, f"rotate{degrees}.mp4",
                      f"-i {source} -c copy -metadata:s:v:0 rotate={degrees}")


@pytest.mark.parametrize("degrees", [90, 180, 270])
def test_a_rotated_video_is_decoded_as_displayed(tmp_path, degrees):
    pytest.importorskip("torchvision")
    path = make_rotated(tmp_path, degrees)
    meta, frames, pixel_values = dump(tmp_path, path)
    ref = reference(path, autorotate=True)  # the ffmpeg CLI turns it by the display matrix
    portrait = degrees != 180
    assert frames.shape[1:3] == ((64, 48) if portrait else (48, 64))
    np.testing.assert_array_equal(frames, ref["frames"])
    assert meta["grid_thw"] == ref["grid_thw"] == ([2, 28, 20] if portrait else [2, 20, 28])
    assert_within_one_level(unpatchify(pixel_values, meta["grid_thw"]), ref["resized"])


def test_python_binding_gives_the_reference_grid_and_pixels(tmp_path):
    mmpt = pytest.importorskip("mmpt")
    pytest.importorskip("torchvision")
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
    assert (np.abs(out["pixel_values_videos"] - ref["pixel_values"]) * std).mean() <= 0.01 / 255
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
