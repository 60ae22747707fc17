"""Whisper-style log-mel features: mmpt.log_mel against the NumPy reference
(tests/python/whisper_ref.py, float64, vectorized: one rfft over all frames, one matrix product
for the filter bank), on one core, in one run, as audio seconds per second and their ratio.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/log_mel_bench.py

Inputs are speech-like clips (tests/python/speech_like.py) of --lengths seconds at
16 kHz, padded to the 30 s window as the models see them; throughput counts the clip's own
seconds, so a short clip costs the reference a whole window. Both sides run on one thread
(BLAS and OpenMP pinned to 1 before NumPy loads); each figure is the fastest of --repeats.

A second table gives the per-clip cost of Qwen2.5-Omni's 300 s window (30,000 frames) computed
whole, and of only the frames a batch keeps (mmpt.log_mel(frames=valid frames), what the loader
computes), with their ratio; both equal frame for frame.
"""

import argparse
import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import mmpt  # noqa: E402
import whisper_ref  # noqa: E402
from speech_like import vowels  # noqa: E402

PRESETS = ("whisper-large-v2", "qwen2-audio")  # 80 and 128 bins


def _fastest(fn, clips, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for clip in clips:
            fn(clip)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=float, nargs="+", default=[5.0, 30.0],
                        help="clip lengths in seconds")
    parser.add_argument("--clips", type=int, default=4, help="clips per length")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rng = np.random.default_rng(14)
    print(f"{'preset':<16} {'clip s':>6} | {'reference audio s/s':>19} {'mmpt audio s/s':>15} "
          f"{'ratio':>7}")
    for preset in PRESETS:
        n_mels = mmpt.mel_filters(preset).shape[0]
        filters = whisper_ref.mel_filter_bank(n_mels)
        for seconds in args.lengths:
            clips = [vowels(seconds, rng).astype(np.float32) for _ in range(args.clips)]
            audio_seconds = seconds * len(clips)
            mmpt.log_mel(clips[0], audio=preset)  # the filter bank and FFT plan, once
            ours = _fastest(lambda c: mmpt.log_mel(c, audio=preset), clips, args.repeats)
            ref = _fastest(lambda c: whisper_ref.log_mel(c, n_mels=n_mels, filters=filters),
                           clips, args.repeats)
            print(f"{preset:<16} {seconds:>6g} | {audio_seconds / ref:>19.0f} "
                  f"{audio_seconds / ours:>15.0f} {ref / ours:>6.1f}x")

    print(f"\n{'qwen2.5-omni':<12} {'clip s':>6} | {'whole window ms/clip':>20} "
          f"{'kept frames ms/clip':>19} {'ratio':>7}")
    for seconds in args.lengths:
        clips = [vowels(seconds, rng).astype(np.float32) for _ in range(args.clips)]
        kept = -(-len(clips[0]) // 160)  # the clip's valid frames: what a batch keeps
        mmpt.log_mel(clips[0], audio="qwen2.5-omni")
        whole = _fastest(lambda c: mmpt.log_mel(c, audio="qwen2.5-omni"), clips, args.repeats)
        only = _fastest(lambda c: mmpt.log_mel(c, audio="qwen2.5-omni", frames=kept), clips,
                        args.repeats)
        print(f"{'qwen2.5-omni':<12} {seconds:>6g} | {1e3 * whole / len(clips):>20.2f} "
              f"{1e3 * only / len(clips):>19.2f} {whole / only:>6.1f}x")


if __name__ == "__main__":
    main()
