#pragma once

// Position ids of one sub-sequence: 1-D (0, 1, 2, ...) or Qwen2-VL's 3-D multimodal rotary
// positions (M-RoPE), as its `get_rope_index` computes them.

#include <cstdint>
#include <span>

#include "mmpt/load/rendered_sample.h"

namespace mmpt::load {

/// Write the M-RoPE positions of `sample` (tokens.size() = n) into `t`, `h`, `w` (n each).
/// Text tokens advance all three rows together; an image's placeholder tokens get
/// (t, h, w) = start + (frame, row, column) over its merged grid
/// (grid_t × grid_h/merge × grid_w/merge), where start is one past the largest position so far;
/// the text after an image continues one past the image's largest position. Positions past
/// the sample's tokens (padding, `pad` more of them) continue the text rule.
/// Precondition: images valid for the sample (see RenderedSample) and grids divisible by merge.
void MropePositions(const RenderedSample& sample, uint32_t merge_size, uint32_t pad,
                    std::span<int32_t> t, std::span<int32_t> h, std::span<int32_t> w);

}  // namespace mmpt::load
