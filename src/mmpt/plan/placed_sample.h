#pragma once

#include <cstdint>

namespace mmpt::plan {

/// A sample as it enters a pack, after the over-long policy.
struct PlacedSample {
  uint64_t row = 0;           // SampleTable row
  uint32_t source = 0;        // its source
  uint32_t tokens = 0;        // text + image tokens kept
  uint32_t text_tokens = 0;   // text tokens kept (fewer than the table's when truncated)
  uint32_t cp_padding = 0;    // padding after it under CP (plan::SamplePadding): packed with it
  uint32_t images = 0;        // its images (the packer's per-pack limit counts them)
  uint32_t media = 0;         // its media items in the step's internal::PoolMedia, when it has one
  bool truncated = false;     // its text was cut to fit
  double vision_seconds = 0;  // its encoders' seconds (cost::SampleCost), costed when drawn
  double audio_seconds = 0;
};

}  // namespace mmpt::plan
