#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/vision/encoder_config.h"

namespace mmpt::vision {

/// One image's (or video's) patch grid: temporal patches × patch rows × patch columns, as the
/// loader's `image_grid_thw` gives it.
struct GridThw {
  int64_t t = 0, h = 0, w = 0;
};

/// Where each row of a pack goes inside the encoder, computed from the grids alone. Rows arrive
/// in the processor's order: per image and frame, 2×2 merge groups in raster order, the four
/// patches of a group consecutive.
struct EncoderLayout {
  int64_t rows = 0;
  /// Full-attention segments, one per (image, frame), as row offsets: attention never crosses
  /// them, so time and memory grow with Σ segment², not rows².
  std::vector<int64_t> cu_seqlens;
  /// Windowed layers (Qwen2.5-VL; empty without windows): merge groups in window order (each
  /// window's groups in raster order, windows of a frame in raster order), and the windows as
  /// row offsets in that order.
  std::vector<int64_t> window_groups;
  std::vector<int64_t> cu_window_seqlens;
  /// Each row's patch row and column inside its frame, for the 2-D rotary embedding.
  std::vector<int64_t> row_h, row_w;
};

/// Lay out `grids` over `rows` rows of pixel_values. Errors: InvalidArgument naming the image
/// when a grid has a zero side or a side that is not a multiple of spatial_merge, and when the
/// grids' patches do not add up to `rows`.
Result<EncoderLayout> PlanLayout(const EncoderConfig& config, std::span<const GridThw> grids,
                                 int64_t rows);

}  // namespace mmpt::vision
