"""An independent NumPy implementation of Qwen3-Omni's audio token count and M-RoPE positions.

Written from Hugging Face transformers' qwen3_omni_moe (processing_qwen3_omni_moe.py,
modeling_qwen3_omni_moe.py) and feature_extraction_whisper.py, and from the released
Qwen3-Omni-30B-A3B-Instruct config.json, not from mmpt:

1. valid mel frames: the processor calls WhisperFeatureExtractor with padding=True (one clip:
   padded to its own length) and, since transformers 5, truncation=False; the attention mask
   is the per-sample mask taken every hop samples, its last entry dropped when the length is
   not whole hops (the STFT's last frame is dropped);
2. audio tokens (_get_feat_extract_output_lengths, n_window 50): 13 per full chunk of 100
   frames, and for the r frames left three stride-2 convolutions, (r - 1) // 2 + 1 each;
3. positions (get_rope_index, without audio in video): text continues one past the largest
   position so far on all three rows; each media item's start token is text, its pads start
   one past it, its end token continues one past the item's largest position; audio pads are
   consecutive on all three rows; an image's or video's pads are start + (t, row, column) of
   its merged grid, t = grid step * second_per_grid * position_id_per_seconds for a video (the
   float product, not truncated: positions are float) and grid step * position_id_per_seconds
   for an image (a single step, 0).
"""

import numpy as np

# config.json thinker_config of Qwen3-Omni-30B-A3B-Instruct.
AUDIO_START, AUDIO_END, AUDIO_PAD = 151669, 151670, 151675
VISION_START, VISION_END, IMAGE_PAD, VIDEO_PAD = 151652, 151653, 151655, 151656
POSITION_ID_PER_SECONDS = 13
SPATIAL_MERGE = 2
N_WINDOW = 50
HOP = 160


def valid_frames(samples, hop=HOP):
    """The attention mask's ones for one clip of `samples` samples, padding=True."""
    mask = np.ones(samples, dtype=np.int64)[::hop]
    if samples % hop != 0:
        mask = mask[:-1]
    return int(mask.sum())


def audio_tokens(frames, n_window=N_WINDOW):
    """_get_feat_extract_output_lengths for `frames` mel frames (int or array)."""
    frames = np.asarray(frames, dtype=np.int64)
    chunk = n_window * 2
    rest = frames % chunk
    after = (rest - 1) // 2 + 1
    out = ((after - 1) // 2 + 1 - 1) // 2 + 1 + (frames // chunk) * 13
    return int(out) if out.ndim == 0 else out


def _text(length, start):
    return np.arange(length, dtype=np.float64)[None, :].repeat(3, axis=0) + start


def _grid(t_index, grid_h, grid_w, start):
    """The (t, h, w) of each merged token, t-major then rows then columns, plus start."""
    gh, gw = grid_h // SPATIAL_MERGE, grid_w // SPATIAL_MERGE
    t = np.repeat(np.asarray(t_index, dtype=np.float64), gh * gw)
    h = np.tile(np.repeat(np.arange(gh, dtype=np.float64), gw), len(t_index))
    w = np.tile(np.arange(gw, dtype=np.float64), len(t_index) * gh)
    return np.stack([t, h, w]) + start


def rope_index(input_ids, image_grids=(), video_grids=(), audio_frames=(),
               second_per_grids=()):
    """get_rope_index for one sequence (attention all ones), as (3, L) float64.

    `audio_frames`: each clip's valid mel frames (the processor's feature_attention_mask sums).
    Items are taken in order: the next audio start or vision start from the cursor, whichever
    comes first; a vision item is an image or a video by the token after its start."""
    tokens = list(input_ids)
    images, videos, audios = iter(image_grids), iter(video_grids), iter(audio_frames)
    seconds = iter(second_per_grids)
    blocks, st = [], 0

    def next_start():
        return float(blocks[-1].max()) + 1 if blocks else 0.0

    def find(token):
        return tokens.index(token, st) if token in tokens[st:] else len(tokens) + 1

    while True:
        ed_vision, ed_audio = find(VISION_START), find(AUDIO_START)
        ed = min(ed_vision, ed_audio)
        if ed > len(tokens):
            break
        blocks.append(_text(ed - st + 1, next_start()))  # the text, then the start token
        if ed == ed_audio:
            length = audio_tokens(next(audios))
            blocks.append(_text(length, next_start()))
        elif tokens[ed + 1] == IMAGE_PAD:
            t, h, w = next(images)
            length = t * h * w // SPATIAL_MERGE**2
            t_index = np.arange(t) * 1 * POSITION_ID_PER_SECONDS
            blocks.append(_grid(t_index, h, w, next_start()))
        else:
            t, h, w = next(videos)
            length = t * h * w // SPATIAL_MERGE**2
            t_index = (np.arange(t, dtype=np.float32) * np.float32(next(seconds))
                       * np.float32(POSITION_ID_PER_SECONDS))
            blocks.append(_grid(t_index, h, w, next_start()))
        blocks.append(_text(1, next_start()))  # the end token
        st = ed + 1 + length + 1
    if st < len(tokens):
        blocks.append(_text(len(tokens) - st, next_start()))
    return np.concatenate(blocks, axis=1)
