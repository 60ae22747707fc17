#include "mmpt/media/patchify.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace mmpt::media {

Result<GridThw> PatchGrid(uint32_t height, uint32_t width, const PatchConfig& config) {
  uint32_t factor = config.patch_size * config.merge_size;
  if (factor == 0 || config.temporal_patch_size == 0 || height == 0 || width == 0 ||
      height % factor != 0 || width % factor != 0) {
    return Status::InvalidArgument("image {}x{} is not on the {}-pixel patch grid", width, height,
                                   factor);
  }
  return GridThw{1, height / config.patch_size, width / config.patch_size};
}

Status NormalizePatchify(const Image& rgb, const PatchConfig& config, std::span<float> out) {
  if (rgb.channels != 3) {
    return Status::InvalidArgument("patchify: needs RGB, got {} channels", rgb.channels);
  }
  MMPT_ASSIGN_OR_RETURN(GridThw grid, PatchGrid(rgb.height, rgb.width, config));
  const uint64_t dim = PatchDim(config);
  if (out.size() != grid.patches() * dim) {
    return Status::InvalidArgument("patchify: output holds {} floats, needs {}", out.size(),
                                   grid.patches() * dim);
  }
  // One table per channel: the reference rescales in float64, casts to float32, then
  // subtracts and divides in float32.
  float table[3][256];
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      float scaled = static_cast<float>(v * (1.0 / 255.0));
      table[c][v] = (scaled - config.mean[c]) / config.std[c];
    }
  }
  const uint32_t p = config.patch_size, m = config.merge_size, tp = config.temporal_patch_size;
  const size_t plane = size_t{p} * p;  // floats of one channel of one temporal slot
  float* dst = out.data();
  for (uint32_t bh = 0; bh < grid.h / m; ++bh) {
    for (uint32_t bw = 0; bw < grid.w / m; ++bw) {
      for (uint32_t mh = 0; mh < m; ++mh) {
        for (uint32_t mw = 0; mw < m; ++mw, dst += dim) {
          uint32_t y0 = (bh * m + mh) * p, x0 = (bw * m + mw) * p;
          for (uint32_t py = 0; py < p; ++py) {
            const uint8_t* src = rgb.row(y0 + py) + size_t{x0} * 3;
            float* r = dst + py * p;
            float* g = r + tp * plane;
            float* b = g + tp * plane;
            for (uint32_t px = 0; px < p; ++px) {
              r[px] = table[0][src[3 * px]];
              g[px] = table[1][src[3 * px + 1]];
              b[px] = table[2][src[3 * px + 2]];
            }
          }
          // The still image repeats in every temporal slot.
          for (uint32_t c = 0; c < 3; ++c) {
            float* first = dst + size_t{c} * tp * plane;
            for (uint32_t t = 1; t < tp; ++t) {
              std::memcpy(first + t * plane, first, plane * sizeof(float));
            }
          }
        }
      }
    }
  }
  return Status::OK();
}

}  // namespace mmpt::media
