#pragma once

// A sample turned into the token sequence the LLM sees, before it is packed: its ids, which
// of them carry loss, and where its images' placeholder tokens sit.

#include <cstdint>
#include <vector>

namespace mmpt::load {

/// One image of a rendered sample.
struct RenderedImage {
  uint32_t token_start = 0;  // first placeholder token, offset within the sample
  uint32_t token_count = 0;  // placeholder tokens = grid_t·grid_h·grid_w / merge²
  uint32_t grid_t = 1;       // patch grid (image_grid_thw), in encoder patches
  uint32_t grid_h = 0;
  uint32_t grid_w = 0;
  uint32_t sample_image = 0;  // index of the image within its sample (MediaMeta order)
};

/// The token sequence of one sample. Invariant: tokens.size() == has_loss.size(); images are
/// in token order, inside [0, tokens.size()), not overlapping.
struct RenderedSample {
  uint32_t source = 0;  // as in the plan
  uint64_t index = 0;   // sample index within its source
  std::vector<int32_t> tokens;
  std::vector<uint8_t> has_loss;  // 1 where the token is a training target
  std::vector<RenderedImage> images;
};

}  // namespace mmpt::load
