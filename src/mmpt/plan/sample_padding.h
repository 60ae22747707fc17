#pragma once

// plan ▸ cp, before packing: where each sample's CP chunk boundaries fall. Transformer Engine
// cuts every sub-sequence of a pack into 2·CP equal chunks on its own, so packing cannot move a
// boundary; a sample's padding can. Under naive CP (no vision DP) every CP rank encodes each
// image its chunks touch, so an image cut by a boundary is encoded twice; padding the sample
// lengthens its chunks and can keep the image inside one.

#include <cstdint>
#include <vector>

#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/cp/vision_assign.h"
#include "mmpt/plan/placed_sample.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::plan {
namespace internal {
struct PoolMedia;  // pack_list_internal.h
}  // namespace internal

/// The padding each sample gets under a layout and CP vision policy: the multiple of the pad
/// multiple, at most the sample's own tokens and what the pack has room for, that minimizes
/// the encoder GPU-seconds naive CP spends on the sample (cp::NaiveSequenceCost) plus what its
/// padding tokens take from the step (each costs the corpus's mean GPU-seconds per real token:
/// the token it displaces). Zero everywhere unless CP > 1 under cp::VisionPolicy::kNaive
/// (vision DP encodes each item once, wherever boundaries fall).
/// The table and model are borrowed and must outlive it.
class SamplePadding {
 public:
  /// Rows of each source the mean seconds per token is taken over: opening a planner reads a
  /// bounded part of any corpus.
  static constexpr uint64_t kMeanRows = 65536;

  SamplePadding(const cost::SampleTable& table, const cost::CostModel& model, const Layout& layout,
                cp::VisionPolicy policy);

  /// Padding tokens after `sample`, whose items are in `media` (0 when none pays).
  uint32_t Of(const PlacedSample& sample, const internal::PoolMedia& media) const;
  /// The corpus's mean GPU-seconds per real token under the layout unpadded (vision encoding
  /// as naive CP does it, and the LLM), over each source's first kMeanRows rows (the whole of a
  /// smaller source): what one padding token costs. 0 when nothing is padded.
  double seconds_per_token() const { return seconds_per_token_; }

 private:
  // Sample k's vision items in `media` at their token offsets, each with its encoder seconds.
  std::vector<cp::CpImage> VisionItems(const internal::PoolMedia& media, uint32_t k) const;

  const cost::SampleTable* table_;
  const cost::CostModel* model_;
  Layout layout_;
  bool enabled_ = false;
  double seconds_per_token_ = 0;
};

}  // namespace mmpt::plan
