#pragma once

#include <cstdint>

#include "mmpt/core/status.h"

namespace mmpt::media {

/// Bounds of the dynamic-resolution rule of Qwen2/2.5/3-VL image processors.
struct ResizeRule {
  uint32_t factor = 28;                  // patch size × spatial merge (14×2; 16×2 for Qwen3-VL)
  uint64_t min_pixels = 56 * 56;         // lower bound on h̄·w̄
  uint64_t max_pixels = 28 * 28 * 1280;  // upper bound on h̄·w̄
  double max_aspect_ratio = 200.0;       // larger ratios are rejected, as the reference does
};

struct ResizedSize {
  uint32_t height = 0;
  uint32_t width = 0;
};

/// Compute the size an image of `height`×`width` pixels is resized to: both sides multiples
/// of `rule.factor`, area within [min_pixels, max_pixels], aspect ratio kept as closely as the
/// grid allows. Rounds half to even, as Python's round() in the reference does.
/// Errors: InvalidArgument for a zero side or an aspect ratio above rule.max_aspect_ratio.
Result<ResizedSize> SmartResize(uint32_t height, uint32_t width, const ResizeRule& rule = {});

/// As SmartResize, with fractional area bounds: qwen-vl-utils' video rule computes its per-frame
/// maximum as total_pixels / frames · 2, which is rarely whole, and the fraction moves the
/// result (a 890x500 frame of a 712-frame video: 672x364, not 644x364 with the bound floored).
Result<ResizedSize> SmartResize(uint32_t height, uint32_t width, uint32_t factor, double min_pixels,
                                double max_pixels, double max_aspect_ratio);

/// Hugging Face's video smart_resize (video_processing_qwen3_vl.py): both sides to multiples of
/// `factor` (sides under it first scaled up to it), then, when `num_frames` rounded to
/// `temporal_factor` frames of that size hold more than `max_pixels` (fewer than `min_pixels`),
/// scaled down (up) by √(num_frames · h · w / bound). Errors: InvalidArgument for a zero side or
/// an aspect ratio above `max_aspect_ratio`. Thread safety: pure function.
Result<ResizedSize> VideoSmartResize(uint64_t num_frames, uint32_t height, uint32_t width,
                                     uint32_t factor, uint32_t temporal_factor, double min_pixels,
                                     double max_pixels, double max_aspect_ratio);

}  // namespace mmpt::media
