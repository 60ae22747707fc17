#include "mmpt/vision/layout.h"

#include <algorithm>
#include <limits>

namespace mmpt::vision {

Result<EncoderLayout> PlanLayout(const EncoderConfig& c, std::span<const GridThw> grids,
                                 int64_t rows) {
  const int64_t m = c.spatial_merge;
  constexpr int64_t kMaxSide = 1 << 20;  // far past any image an encoder accepts
  int64_t total = 0;
  for (size_t i = 0; i < grids.size(); ++i) {
    const GridThw& g = grids[i];
    if (g.t < 1 || g.h < 1 || g.w < 1 || g.t > kMaxSide || g.h > kMaxSide || g.w > kMaxSide ||
        g.h % m != 0 || g.w % m != 0) {
      return Status::InvalidArgument(
          "image {}: grid (t={}, h={}, w={}) is not a grid of {}x{}-merged patches", i, g.t, g.h,
          g.w, m, m);
    }
    total += g.t * g.h * g.w;
    if (total > std::numeric_limits<int32_t>::max()) {
      return Status::InvalidArgument("image {}: the grids hold more than 2^31 patches", i);
    }
  }
  if (total != rows) {
    return Status::InvalidArgument(
        "image_grid_thw covers {} patches ({} images) but pixel_values has {} rows", total,
        grids.size(), rows);
  }
  EncoderLayout layout;
  layout.rows = rows;
  layout.cu_seqlens.push_back(0);
  layout.row_h.reserve(rows);
  layout.row_w.reserve(rows);
  const bool windows = c.window_merged > 0;
  if (windows) layout.cu_window_seqlens.push_back(0);
  const int64_t win = c.window_merged;
  int64_t group_offset = 0;
  for (const GridThw& g : grids) {
    const int64_t gh = g.h / m, gw = g.w / m;  // merge groups per column and row
    for (int64_t t = 0; t < g.t; ++t) {
      layout.cu_seqlens.push_back(layout.cu_seqlens.back() + g.h * g.w);
      for (int64_t bh = 0; bh < gh; ++bh) {
        for (int64_t bw = 0; bw < gw; ++bw) {
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < m; ++j) {
              layout.row_h.push_back(bh * m + i);
              layout.row_w.push_back(bw * m + j);
            }
          }
        }
      }
      if (!windows) continue;
      const int64_t frame = group_offset + t * gh * gw;
      for (int64_t wh = 0; wh < gh; wh += win) {
        for (int64_t ww = 0; ww < gw; ww += win) {
          const int64_t h_end = std::min(wh + win, gh), w_end = std::min(ww + win, gw);
          for (int64_t bh = wh; bh < h_end; ++bh) {
            for (int64_t bw = ww; bw < w_end; ++bw) {
              layout.window_groups.push_back(frame + bh * gw + bw);
            }
          }
          layout.cu_window_seqlens.push_back(layout.cu_window_seqlens.back() +
                                             (h_end - wh) * (w_end - ww) * m * m);
        }
      }
    }
    group_offset += g.t * gh * gw;
  }
  return layout;
}

}  // namespace mmpt::vision
