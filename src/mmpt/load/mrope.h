#pragma once

// Position ids of one sub-sequence: 1-D (0, 1, 2, ...) or Qwen2-VL's 3-D multimodal rotary
// positions (M-RoPE), as its `get_rope_index` computes them, with Qwen2.5-VL's time-aligned
// temporal positions for video.

#include <cstdint>
#include <span>

#include "mmpt/load/rendered_sample.h"

namespace mmpt::load {

/// Write the M-RoPE positions of `sample` (tokens.size() + pad = n) into `t`, `h`, `w` (n
/// each). Text tokens advance all three rows together; an image's or video's placeholder
/// tokens get (t, h, w) = start + (time, row, column) over its merged grid
/// (grid_t × grid_h/merge × grid_w/merge), where start is one past the largest position so far;
/// the text after an item continues one past the item's largest position. Time is the grid
/// step f, or, for a video when `tokens_per_second` > 0 (Qwen2.5-VL, Qwen2.5-Omni, Qwen3-Omni),
/// ⌊f · second_per_grid_t · tokens_per_second⌋ computed in float32 as the reference does.
/// Qwen3-Omni's get_rope_index keeps that product unrounded (its positions are float); these
/// are int32, equal to its positions since its grid step is always 1 s (temporal patch 2 over
/// its processor's fps 2: media::GridSeconds::kRuleFps), 13 f; a preset asking another rate
/// would drop the fraction (which the reference carries on into the text after the video). Audio
/// placeholders follow the text rule (Qwen2.5-Omni's and Qwen3-Omni's audio without video). A video
/// with its sound track (sample.sound_tracks) is its block's media::AudioInVideoPositions from one
/// past the largest position so far, the text after it where that returns (cut where the sample
/// ends). Positions past the sample's tokens (padding, `pad` more of them) continue the text rule.
/// Precondition: items valid for the sample (see RenderedSample) and grids divisible by merge.
void MropePositions(const RenderedSample& sample, uint32_t merge_size, float tokens_per_second,
                    uint32_t pad, std::span<int32_t> t, std::span<int32_t> h, std::span<int32_t> w);

}  // namespace mmpt::load
