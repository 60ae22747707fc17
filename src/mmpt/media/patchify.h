#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "mmpt/core/status.h"
#include "mmpt/media/image.h"

namespace mmpt::media {

/// How a resized RGB image becomes vision-encoder input: rescale by 1/255, normalize with a
/// per-channel mean and std, cut into patches. Defaults are Qwen2-VL's (CLIP mean/std, patch
/// 14, temporal patch 2, 2×2 merge).
struct PatchConfig {
  uint32_t patch_size = 14;
  uint32_t temporal_patch_size = 2;  // a still image is repeated this many times in time
  uint32_t merge_size = 2;
  std::array<float, 3> mean = {0.48145466f, 0.4578275f, 0.40821073f};
  std::array<float, 3> std = {0.26862954f, 0.26130258f, 0.27577711f};
};

/// The patch grid of one image, as `image_grid_thw` reports it.
struct GridThw {
  uint32_t t = 0;
  uint32_t h = 0;
  uint32_t w = 0;
  uint64_t patches() const { return uint64_t{t} * h * w; }
};

/// Grid of a still image of `height`×`width` pixels (both multiples of patch × merge).
/// Errors: InvalidArgument when a side is not such a multiple.
Result<GridThw> PatchGrid(uint32_t height, uint32_t width, const PatchConfig& config = {});

/// Floats per patch row: channels × temporal patch × patch².
inline uint64_t PatchDim(const PatchConfig& config) {
  return uint64_t{3} * config.temporal_patch_size * config.patch_size * config.patch_size;
}

/// Rescale, normalize and patchify an RGB image into `out`, which must hold exactly
/// grid.patches() × PatchDim(config) floats, in the element order of Hugging Face's
/// Qwen2VLImageProcessor: rows ordered (t, h/merge, w/merge, merge_h, merge_w), each row
/// (channel, temporal, patch_y, patch_x); the still image fills every temporal slot. Values
/// equal float32 ((v·(1/255)) − mean) / std computed the way the reference computes them.
/// Errors: InvalidArgument (not 3 channels, size not on the grid, wrong `out` size).
/// Thread safety: reentrant; writes only `out`.
Status NormalizePatchify(const Image& rgb, const PatchConfig& config, std::span<float> out);

/// As NormalizePatchify for a video: `frames` (all RGB, one size, a multiple of the temporal
/// patch in number) become grid.t = frames / temporal patch temporal patches, rows ordered
/// (t, h/merge, w/merge, merge_h, merge_w), each row (channel, temporal, patch_y, patch_x) as
/// Qwen2VLImageProcessor orders `pixel_values_videos`. `out` must hold exactly
/// grid.patches() × PatchDim(config) floats.
/// Errors: InvalidArgument (frame count, channels, mismatched sizes, size not on the grid,
/// wrong `out` size). Thread safety: reentrant; writes only `out`.
Status NormalizePatchifyFrames(std::span<const Image* const> frames, const PatchConfig& config,
                               std::span<float> out);

}  // namespace mmpt::media
