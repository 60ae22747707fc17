"""An independent reference of Qwen2.5-VL's video input, for the fidelity test and the video
benchmark. PyAV (Debian's python3-av) decodes every frame, as qwen-vl-utils' torchvision
backend reads the whole clip; qwen-vl-utils' sampling rule picks frames (smart_nframes,
round(torch.linspace), fetch_video's per-frame pixel budget; Qwen2.5-VL's defaults); Pillow's
BICUBIC resizes; NumPy normalizes and patchifies as Hugging Face's Qwen2VLImageProcessor does."""

import math
import os
import sys

import av
import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "media"))
from hf_image_reference import smart_resize  # noqa: E402  (qwen-vl-utils' rule, one copy)

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
