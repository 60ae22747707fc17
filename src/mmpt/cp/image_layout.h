#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cp/vision_assign.h"

namespace mmpt::cp {

/// An image of a pack known only by its sample and size: where its tokens sit inside the sample
/// is not in the planning metadata.
struct SampleImage {
  uint32_t seq = 0;          // sub-sequence (sample) of the pack, 0-based in pack order
  uint32_t token_count = 0;  // LLM tokens of the image
  double vision_cost = 0;    // encoding cost (any consistent unit)
};

/// Place each sample's images inside its sub-sequence, in order, with the sample's text tokens
/// spread around them as cost::SpreadTextPosition spreads them (the rule the planner uses for
/// metadata that gives no positions): a caption pair's image mid-sample, an interleaved
/// document's images spaced like paragraphs.
/// `images` must be grouped by `seq`, ascending. Errors: InvalidArgument naming the sample when
/// its images hold more tokens than it, or when `seq` is out of range or out of order.
Result<std::vector<CpImage>> PlaceImages(std::span<const uint32_t> seq_lengths,
                                         std::span<const SampleImage> images);

}  // namespace mmpt::cp
