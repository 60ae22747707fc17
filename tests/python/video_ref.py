"""An independent reference of Qwen2.5-VL's video input, for the fidelity test and the video
benchmark. PyAV (Debian's python3-av) decodes every frame, as qwen-vl-utils' torchvision
backend reads the whole clip, or the ffmpeg CLI does with its autorotate (a rotated phone video
as displayed); qwen-vl-utils' sampling rule picks frames (smart_nframes, round(torch.linspace),
fetch_video's per-frame pixel budget; Qwen2.5-VL's defaults); torchvision's
F.resize(BICUBIC, antialias=True) resizes the uint8 frames as fetch_video does (or Pillow's
BICUBIC, mmpt's other rule); NumPy normalizes and patchifies as Hugging Face's
Qwen2VLImageProcessor does."""

import json
import math
import os
import subprocess
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


def decode_pyav(path):
    """Every frame of the first video stream as coded (RGB, T x H x W x 3) and its fps."""
    with av.open(path) as container:
        stream = container.streams.video[0]
        video_fps = float(stream.average_rate)
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
    return np.stack(frames), video_fps


def decode_ffmpeg(path):
    """Every frame as the ffmpeg CLI decodes it by default: turned and mirrored by the display
    matrix (autorotate), RGB, T x H x W x 3; and the fps."""
    probe = json.loads(subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
         "stream=width,height,avg_frame_rate:stream_side_data=rotation", "-of", "json", path],
        check=True, capture_output=True, text=True).stdout)["streams"][0]
    width, height = probe["width"], probe["height"]
    rotation = int(probe.get("side_data_list", [{}])[0].get("rotation", 0))
    if rotation % 180:
        width, height = height, width
    raw = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-fps_mode",
                          "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         check=True, capture_output=True).stdout
    num, den = probe["avg_frame_rate"].split("/")
    return np.frombuffer(raw, np.uint8).reshape(-1, height, width, 3), int(num) / int(den)


def resize_frames(frames, height, width, rule="torchvision"):
    """uint8 frames (T x H x W x 3) resized to height x width: torchvision's
    F.resize(uint8 TCHW, BICUBIC, antialias=True) as qwen-vl-utils' fetch_video calls it, or
    Pillow's Image.resize(BICUBIC)."""
    if rule == "pillow":
        return np.stack([np.asarray(Image.fromarray(f).resize((width, height), Image.BICUBIC))
                         for f in frames])
    import torch
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms import functional as F
    video = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2)
    resized = F.resize(video, [height, width], interpolation=InterpolationMode.BICUBIC,
                       antialias=True)
    return resized.permute(0, 2, 3, 1).numpy()


def patchify(resized):
    """Normalized, patchified rows (Qwen2VLImageProcessor) of uint8 frames T x H x W x 3."""
    n, rh, rw = resized.shape[:3]
    x = (resized.astype(np.float32) * np.float32(1 / 255) - MEAN) / STD  # T, H, W, C
    x = x.transpose(0, 3, 1, 2)  # T, C, H, W
    gt, gh, gw = n // TEMPORAL, rh // PATCH, rw // PATCH
    x = x.reshape(gt, TEMPORAL, 3, gh // MERGE, MERGE, PATCH, gw // MERGE, MERGE, PATCH)
    x = x.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(gt * gh * gw, 3 * TEMPORAL * PATCH * PATCH)


def unpatchify(pixel_values, grid_thw):
    """The uint8 frames (T x H x W x 3) behind Qwen-VL pixel values: patchify undone, the
    normalization inverted and rounded (exact: levels are 1/255 apart, float error ~1e-5)."""
    gt, gh, gw = grid_thw
    x = np.asarray(pixel_values, np.float64).reshape(
        gt, gh // MERGE, gw // MERGE, MERGE, MERGE, 3, TEMPORAL, PATCH, PATCH)
    x = x.transpose(0, 6, 5, 1, 3, 7, 2, 4, 8).reshape(gt * TEMPORAL, 3, gh * PATCH, gw * PATCH)
    x = (x.transpose(0, 2, 3, 1) * STD + MEAN) * 255
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def reference(path, resize="torchvision", autorotate=False):
    frames, video_fps = decode_ffmpeg(path) if autorotate else decode_pyav(path)
    total = len(frames)
    n = nframes_for(total, video_fps)
    idx = sample_indices(total, n)
    sampled = frames[idx]
    height, width = sampled.shape[1:3]
    max_pixels = max(min(VIDEO_MAX_PIXELS, VIDEO_TOTAL_PIXELS / n * FRAME_FACTOR),
                     int(VIDEO_MIN_PIXELS * 1.05))
    rh, rw = smart_resize(height, width, min_pixels=VIDEO_MIN_PIXELS, max_pixels=max_pixels)
    resized = resize_frames(sampled, rh, rw, resize)
    sample_fps = n / max(total, 1e-6) * video_fps
    return dict(total_frames=total, frame_indices=idx, frames=sampled, resized=resized,
                grid_thw=[n // TEMPORAL, rh // PATCH, rw // PATCH], pixel_values=patchify(resized),
                second_per_grid_t=TEMPORAL / sample_fps, height=rh, width=rw)
