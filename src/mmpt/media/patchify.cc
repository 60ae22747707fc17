#include "mmpt/media/patchify.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace mmpt::media {
namespace {

// Copy `n` floats to `dst` with non-temporal stores where it is 16-byte aligned: the output
// is written once and read much later (by the batch consumer), so keeping it out of the cache
// saves the read-for-ownership traffic of ordinary stores. Call StoreFence() after the last.
void StorePlane(const float* src, size_t n, float* dst) {
#if defined(__SSE2__)
  if (reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
    size_t i = 0;
    for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
    for (; i < n; ++i) dst[i] = src[i];
    return;
  }
#endif
  std::memcpy(dst, src, n * sizeof(float));
}

void StoreFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace

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
  // A still image fills every temporal slot of its one temporal patch.
  std::vector<const Image*> frames(config.temporal_patch_size, &rgb);
  return NormalizePatchifyFrames(frames, config, out);
}

Status NormalizePatchifyFrames(std::span<const Image* const> frames, const PatchConfig& config,
                               std::span<float> out) {
  const uint32_t tp = config.temporal_patch_size;
  if (frames.empty() || tp == 0 || frames.size() % tp != 0) {
    return Status::InvalidArgument("patchify: {} frames is not a multiple of the temporal patch {}",
                                   frames.size(), tp);
  }
  const Image& first = *frames[0];
  for (const Image* frame : frames) {
    if (frame->channels != 3) {
      return Status::InvalidArgument("patchify: needs RGB, got {} channels", frame->channels);
    }
    if (frame->width != first.width || frame->height != first.height) {
      return Status::InvalidArgument("patchify: frames of {}x{} and {}x{}", first.width,
                                     first.height, frame->width, frame->height);
    }
  }
  MMPT_ASSIGN_OR_RETURN(GridThw grid, PatchGrid(first.height, first.width, config));
  grid.t = static_cast<uint32_t>(frames.size() / tp);
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
  const uint32_t p = config.patch_size, m = config.merge_size;
  const size_t plane = size_t{p} * p;  // floats of one channel of one temporal slot
  const size_t row_bytes = first.row_bytes();
  // Source byte offset of every position of a patch, in output order (y, x).
  std::vector<uint32_t> offsets(plane);
  for (uint32_t py = 0; py < p; ++py) {
    for (uint32_t px = 0; px < p; ++px) {
      offsets[size_t{py} * p + px] = static_cast<uint32_t>(py * row_bytes + px * 3);
    }
  }
  std::vector<float> values(plane);
  float* dst = out.data();
  for (uint32_t gt = 0; gt < grid.t; ++gt) {
    const Image* const* slots = frames.data() + size_t{gt} * tp;
    for (uint32_t bh = 0; bh < grid.h / m; ++bh) {
      for (uint32_t bw = 0; bw < grid.w / m; ++bw) {
        for (uint32_t mh = 0; mh < m; ++mh) {
          for (uint32_t mw = 0; mw < m; ++mw, dst += dim) {
            const size_t base =
                size_t{(bh * m + mh) * p} * row_bytes + size_t{(bw * m + mw) * p} * 3;
            for (uint32_t c = 0; c < 3; ++c) {
              // One channel plane in output order per temporal slot; a slot showing the same
              // frame as the one before (a still image) reuses it. The output, megabytes per
              // image, is written once and sequentially.
              const float* lut = table[c];
              for (uint32_t t = 0; t < tp; ++t) {
                if (t == 0 || slots[t] != slots[t - 1]) {
                  const uint8_t* src = slots[t]->pixels.data() + base;
                  for (size_t i = 0; i < plane; ++i) values[i] = lut[src[offsets[i] + c]];
                }
                StorePlane(values.data(), plane, dst + (size_t{c} * tp + t) * plane);
              }
            }
          }
        }
      }
    }
  }
  StoreFence();
  return Status::OK();
}

}  // namespace mmpt::media
