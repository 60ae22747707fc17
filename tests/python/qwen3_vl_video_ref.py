"""An independent reference of how Qwen3-VL turns a video into text and positions, in plain
Python and NumPy (no mmpt), written from the upstream sources for the tests to check against:

* Hugging Face transformers, models/qwen3_vl: Qwen3VLVideoProcessor.sample_frames and the video
  smart_resize (video_processing_qwen3_vl.py); Qwen3VLProcessor._calculate_timestamps and
  replace_video_token (processing_qwen3_vl.py); Qwen3VLModel.get_rope_index (modeling_qwen3_vl.py).
* qwen-vl-utils of QwenLM/Qwen3-VL (vision_process.py): calculate_video_frame_range,
  smart_nframes, the torch.linspace sampling of the decord/torchcodec readers and fetch_video's
  per-frame pixel budget.

The class defaults are used where a function takes sizes; the released checkpoints'
video_preprocessor_config.json sets its own (HUB_VIDEO_MIN_PIXELS, HUB_VIDEO_MAX_PIXELS).
make_video and probe write and read real clips (ffmpeg, PyAV)."""

import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "media"))
from hf_image_reference import smart_resize  # noqa: E402  (the image rule, one copy)

PATCH, MERGE, TEMPORAL = 16, 2, 2
FACTOR = PATCH * MERGE  # 32
# Qwen3VLVideoProcessor's class defaults (size shortest_edge / longest_edge), for the whole clip.
HF_VIDEO_MIN_PIXELS, HF_VIDEO_MAX_PIXELS = 128 * 32 * 32, 768 * 32 * 32
# What the Qwen3-VL checkpoints' video_preprocessor_config.json ships instead.
HUB_VIDEO_MIN_PIXELS, HUB_VIDEO_MAX_PIXELS = 4096, 25165824
# qwen-vl-utils (Qwen3-VL) constants.
FPS, FRAME_FACTOR, FPS_MIN_FRAMES, FPS_MAX_FRAMES = 2.0, 2, 4, 768
VIDEO_MIN_TOKEN_NUM, VIDEO_MAX_TOKEN_NUM, MODEL_SEQ_LEN = 128, 768, 128000

VISION_START, VISION_END, VIDEO_PAD = "<|vision_start|>", "<|vision_end|>", "<|video_pad|>"


# Hugging Face: Qwen3VLVideoProcessor.


def hf_sample(total_frames, video_fps, fps=2.0, min_frames=4, max_frames=768):
    """Qwen3VLVideoProcessor.sample_frames with fps given: int() truncates the wanted count,
    clamped to [min_frames, max_frames] and to the clip; np.linspace over the whole clip,
    rounded half to even."""
    n = int(total_frames / video_fps * fps)
    n = min(max(n, min_frames), max_frames, total_frames)
    return np.linspace(0, total_frames - 1, n).round().astype(int).tolist()


def hf_resize(num_frames, height, width, factor=32, temporal=2, min_pixels=HF_VIDEO_MIN_PIXELS,
              max_pixels=HF_VIDEO_MAX_PIXELS, cap_pixels_per_frame=False):
    """video_processing_qwen3_vl.smart_resize as Qwen3VLVideoProcessor.resize calls it: the
    bounds hold for the whole clip. A side under `factor` first scales both up (int()); the
    test uses t_bar = round(num_frames / temporal) * temporal (round half to even), beta uses
    num_frames. cap_pixels_per_frame: the newer processor's opt-in qwen-vl-utils-like cap."""
    if cap_pixels_per_frame:
        per_frame = max(min(768 * factor * factor, max_pixels // num_frames),
                        int(min_pixels * 1.05))
        max_pixels = per_frame * num_frames
    if num_frames < temporal:
        raise ValueError(f"t:{num_frames} must be larger than temporal_factor:{temporal}")
    if height < factor or width < factor:
        scale = max(factor / height, factor / width)
        height, width = int(height * scale), int(width * scale)
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio of {width}x{height} above 200")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    t_bar = round(num_frames / temporal) * temporal
    if t_bar * h_bar * w_bar > max_pixels:
        beta = math.sqrt(num_frames * height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif t_bar * h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (num_frames * height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


# qwen-vl-utils (QwenLM/Qwen3-VL).


def utils_frame_range(total_frames, video_fps, video_start=None, video_end=None):
    """calculate_video_frame_range: (start_frame, end_frame, count), absolute indices. Times
    clamp to [0, total/fps]; start ceil(s * fps), end floor(e * fps) capped at the last frame."""
    if video_fps <= 0 or total_frames <= 0:
        raise ValueError("video_fps and total_frames must be positive")
    if video_start is None and video_end is None:
        return 0, total_frames - 1, total_frames
    duration = total_frames / video_fps
    start = 0
    if video_start is not None:
        start = math.ceil(max(0.0, min(video_start, duration)) * video_fps)
    end = total_frames - 1
    if video_end is not None:
        end = min(math.floor(max(0.0, min(video_end, duration)) * video_fps), total_frames - 1)
    if start >= end:
        raise ValueError(f"start frame {start} not before end frame {end}")
    return start, end, end - start + 1


def utils_nframes(total_frames, video_fps, fps=2.0, min_frames=4, max_frames=768,
                  frame_factor=2):
    """smart_nframes with fps: the bounds rounded to the factor (min up, max down and under
    the clip), the float count clamped, then floored to the factor."""
    lo = math.ceil(min_frames / frame_factor) * frame_factor
    hi = math.floor(min(max_frames, total_frames) / frame_factor) * frame_factor
    n = min(min(max(total_frames / video_fps * fps, lo), hi), total_frames)
    n = math.floor(n / frame_factor) * frame_factor
    if not frame_factor <= n <= total_frames:
        raise ValueError(f"nframes should be in [{frame_factor}, {total_frames}], got {n}")
    return n


def _linspace_round(start, end, n):
    """torch.linspace(start, end, n).round().long(): float32, round half to even."""
    try:
        import torch
        return torch.linspace(start, end, n).round().long().tolist()
    except ImportError:
        return np.round(np.linspace(start, end, n)).astype(int).tolist()


def utils_sample(total_frames, video_fps, video_start=None, video_end=None, fps=2.0,
                 min_frames=4, max_frames=768, frame_factor=2):
    """The decord / torchcodec readers: the range, smart_nframes on its frame count, then
    torch.linspace between the range's absolute first and last frames."""
    start, end, count = utils_frame_range(total_frames, video_fps, video_start, video_end)
    n = utils_nframes(count, video_fps, fps, min_frames, max_frames, frame_factor)
    return _linspace_round(start, end, n)


def utils_resize(num_frames, height, width, factor=32):
    """fetch_video's per-frame budget (max(min(768 tokens, 0.9 * MODEL_SEQ_LEN tokens / n * 2),
    int(128 tokens * 1.05)), a token being factor x factor pixels) through the image
    smart_resize. hf_image_reference's copy keeps max(factor, ...) on the shrink branch, which
    qwen-vl-utils lacks; they differ only where its result would be 0."""
    min_pixels = VIDEO_MIN_TOKEN_NUM * factor * factor
    total_pixels = MODEL_SEQ_LEN * factor * factor * 0.9
    max_pixels = max(min(VIDEO_MAX_TOKEN_NUM * factor * factor,
                         total_pixels / num_frames * FRAME_FACTOR), int(min_pixels * 1.05))
    return smart_resize(height, width, factor=factor, min_pixels=min_pixels,
                        max_pixels=max_pixels)


# Hugging Face: Qwen3VLProcessor and Qwen3VLModel.


def timestamps(indices, video_fps, merge=2):
    """Qwen3VLProcessor._calculate_timestamps: pad to a multiple of merge by repeating the last
    index, then per group the mean of its first and last frame's idx / fps."""
    indices = list(indices)
    if len(indices) % merge:
        indices += [indices[-1]] * (merge - len(indices) % merge)
    seconds = [i / video_fps for i in indices]
    return [(seconds[i] + seconds[i + merge - 1]) / 2 for i in range(0, len(seconds), merge)]


def expand_video(timestamps, grid_t, grid_h, grid_w, merge=2):
    """Qwen3VLProcessor.replace_video_token: per temporal group "<t seconds>" (format .1f, so
    round half to even on the exact binary value) and the group's own vision start/end."""
    pads = VIDEO_PAD * (grid_h * grid_w // merge ** 2)
    return "".join(f"<{timestamps[t]:.1f} seconds>" + VISION_START + pads + VISION_END
                   for t in range(grid_t))


def _split_videos(video_grids):
    """get_rope_index's first step: repeat_interleave each video grid by its t, with t = 1."""
    return [(1, h, w) for t, h, w in video_grids for _ in range(t)]


def _count_items(ids, image_token_id, video_token_id, vision_start_id):
    """Images and videos counted as the tokens right after each vision start."""
    starts = np.flatnonzero(ids == vision_start_id)
    following = ids[starts[starts + 1 < len(ids)] + 1]
    return int((following == image_token_id).sum()), int((following == video_token_id).sum())


def _text_block(length, start):
    return np.tile(np.arange(length, dtype=np.int64), (3, 1)) + start


def _grid_block(t, h, w):
    """The (t, h, w) index of each merged token, t-major then rows then columns."""
    return np.stack([np.repeat(np.arange(t), h * w), np.tile(np.repeat(np.arange(h), w), t),
                     np.tile(np.arange(w), t * h)]).astype(np.int64)


def rope_index(input_ids, image_grids, video_grids, spatial_merge, image_token_id,
               video_token_id, vision_start_id):
    """Qwen3VLModel.get_rope_index for one sequence, attention all ones, as (3, L) int64.
    Each item starts at the first image / video pad at or after the cursor (whichever comes
    first); the text before it continues from the last block's max + 1; the item's grid sits
    text_len past that start; the cursor then skips t * h * w // merge**2 pads."""
    ids = np.asarray(input_ids, dtype=np.int64)
    tokens = ids.tolist()
    videos = _split_videos(video_grids)
    images_left, videos_left = _count_items(ids, image_token_id, video_token_id,
                                            vision_start_id)
    blocks, st, image, video = [], 0, 0, 0
    for _ in range(images_left + videos_left):
        ed_image = ed_video = len(tokens) + 1
        if image_token_id in tokens and images_left > 0:
            ed_image = tokens.index(image_token_id, st)
        if video_token_id in tokens and videos_left > 0:
            ed_video = tokens.index(video_token_id, st)
        if ed_image < ed_video:
            (t, h, w), ed = image_grids[image], ed_image
            image, images_left = image + 1, images_left - 1
        else:
            (t, h, w), ed = videos[video], ed_video
            video, videos_left = video + 1, videos_left - 1
        gh, gw = h // spatial_merge, w // spatial_merge
        text_len = ed - st
        st_idx = int(blocks[-1].max()) + 1 if blocks else 0
        blocks.append(_text_block(text_len, st_idx))
        blocks.append(_grid_block(t, gh, gw) + text_len + st_idx)
        st = ed + t * gh * gw
    if st < len(tokens):
        st_idx = int(blocks[-1].max()) + 1 if blocks else 0
        blocks.append(_text_block(len(tokens) - st, st_idx))
    return np.concatenate(blocks, axis=1)


# Real clips.


def make_video(path, fps, frames, width, height):
    """A testsrc2 clip of exactly `frames` frames at `fps` (e.g. 24, "30000/1001"), H.264
    yuv420p with one keyframe."""
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi",
                    "-i", f"testsrc2=size={width}x{height}:rate={fps}",
                    "-frames:v", str(frames), "-pix_fmt", "yuv420p", "-c:v", "libx264",
                    "-g", "1000", str(path)], check=True)
    return str(path)


def probe(path):
    """(decoded frame count, float(stream.average_rate)) through PyAV."""
    import av
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        fps = float(stream.average_rate)
        total = sum(1 for _ in container.decode(stream))
    return total, fps
