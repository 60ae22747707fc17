"""Video preprocessing for Qwen2.5-VL: mmpt.preprocess_video against the reference
(tests/python/video_ref.py: PyAV decode, qwen-vl-utils' frame sampling, torchvision's bicubic +
antialias resize, NumPy normalize and patchify), in one run, pinned to one core, as sampled
frames per second and video seconds per second, with their ratio; and mmpt's two resize rules
(torchvision's, the default, and Pillow's) side by side.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/video_bench.py

The clips are h264 (High profile, B-frames, a keyframe every 2 s) made by Debian's ffmpeg at real
COCO image sizes, --seconds long at 30 fps. The reference decodes every frame, as qwen-vl-utils'
torchvision backend reads the whole clip; mmpt decodes only what its seeks to the sampled frames
leave. Both hand on the same frame indices and grid (checked here). Each figure is the fastest
of --repeats.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core for both sides
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import mmpt  # noqa: E402
import video_ref  # noqa: E402

SIZES = ((640, 480), (640, 427), (480, 640))  # the most common COCO val2017 sizes


def make_clips(directory, seconds):
    clips = []
    for i, (w, h) in enumerate(SIZES):
        path = os.path.join(directory, f"clip{i}.mp4")
        subprocess.run(["ffmpeg", "-nostdin", "-y", "-loglevel", "error", "-f", "lavfi", "-i",
                        f"testsrc2=size={w}x{h}:rate=30:duration={seconds}", "-c:v", "libx264",
                        "-preset", "superfast", "-g", "60", "-pix_fmt", "yuv420p", path],
                       check=True)
        with open(path, "rb") as f:
            clips.append((path, f.read()))
    return clips


def fastest(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each clip")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clips = make_clips(tmp, args.seconds)
        frames = 0
        for path, data in clips:  # same frames and grid on both sides
            ours, ref = mmpt.preprocess_video(data), video_ref.reference(path)
            assert ours["frame_indices"] == ref["frame_indices"], path
            assert list(ours["video_grid_thw"]) == ref["grid_thw"], path
            frames += len(ref["frame_indices"])
        reference = fastest(lambda: [video_ref.reference(p) for p, _ in clips], args.repeats)
        native = fastest(lambda: [mmpt.preprocess_video(d) for _, d in clips], args.repeats)
        pillow = fastest(lambda: [mmpt.preprocess_video(d, resize="pillow") for _, d in clips],
                         args.repeats)
    video_seconds = args.seconds * len(clips)
    sizes = ", ".join(f"{w}x{h}" for w, h in SIZES)
    print(f"{len(clips)} clips of {args.seconds:g} s at 30 fps ({sizes}), {frames} frames "
          "sampled, one core")
    print(f"{'':<28}{'reference':>14}{'mmpt':>14}{'ratio':>10}")
    print(f"{'sampled frames/s':<28}{frames / reference:>14.1f}{frames / native:>14.1f}"
          f"{reference / native:>9.1f}x")
    print(f"{'video seconds/s':<28}{video_seconds / reference:>14.1f}"
          f"{video_seconds / native:>14.1f}{reference / native:>9.1f}x")
    print(f"{'':<28}{'pillow rule':>14}{'torchvision':>14}{'ratio':>10}")
    print(f"{'mmpt sampled frames/s':<28}{frames / pillow:>14.1f}{frames / native:>14.1f}"
          f"{pillow / native:>9.2f}x")


if __name__ == "__main__":
    main()
