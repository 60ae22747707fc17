#pragma once

// plan ▸ cp: the one place that decides how each pack is split over its CP group and who
// encodes each image. The loader executes what this stage decides and the simulator evaluates
// it; neither re-derives it.

#include <cstddef>
#include <span>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cp/thd_split.h"
#include "mmpt/cp/vision_assign.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::plan {

/// What the cp stage needs of one pack: its sub-sequence lengths; its vision items (images in
/// pack order, then videos in pack order: PackCp::vision's indexing) at their exact token
/// positions in the unpadded pack (PlannedImage::token_start), each with its encoder seconds
/// (the pack's vision seconds shared by vision FLOPs); its audio clips (plan::AudioClips: a
/// clip of several parts has a run per part) likewise, with the pack's audio seconds shared by
/// audio FLOPs.
struct PackCpInput {
  std::vector<uint32_t> lengths;
  std::vector<uint32_t> padding;  // per sequence: PlannedSequence::cp_padding
  std::vector<cp::CpImage> images;
  std::vector<cp::CpImage> audio;
};

/// The one order of a pack's vision items, which PackCp::vision indexes and the loader's pixel
/// arrays and routing follow: its images in pack order, then its videos in pack order. Given
/// each item's kind in pack order (non-zero: a video), returns the items' indices in that order.
std::vector<uint32_t> VisionItemOrder(std::span<const uint8_t> is_video);

/// Build the cp stage's input for pack `pack` of `plan`; with `kept` (one flag per sequence of
/// the pack), only the sequences flagged non-zero, packed one after the other.
PackCpInput MakePackCpInput(const StepPlan& plan, size_t pack, std::span<const uint8_t> kept = {});

/// Split one pack of `layout` (`input`: its sequences, padded as they say, and its items) and
/// assign its vision items (and its audio clips, if any, to the audio encoders of the same ranks)
/// under `policy`: the one function behind every PackCp (AddCpStage, and the loader when a
/// sample is dropped from a pack at load time). Errors: those of cp::SplitThd and
/// cp::AssignVision.
Result<PackCp> PlanPackCp(const Layout& layout, const PackCpInput& input, cp::VisionPolicy policy);

/// Split every pack of `plan` over its CP group and assign its images under `policy`, filling
/// plan.cp (one entry per pack, for every layout: at CP 1 the split still carries the padding
/// and the assignment puts every image on rank 0). Errors: those of PlanPackCp, naming the pack.
Status AddCpStage(StepPlan& plan, cp::VisionPolicy policy);

/// The cost vector of every pack of `plan` (after its cp stage) under its layout: per encoder and
/// for the LLM, the most-loaded CP rank's (cp::MostLoaded of cp::PackRankLoads: under kNaive the
/// duplicated items included, under kCount and kCost the assignment's), the LLM split by tokens
/// and `attention_pair_weight` times causal pairs. What the balancer evens out under CP, never a
/// pack's total divided by CP. An empty pack slot costs nothing.
std::vector<balance::PackCost> CpPackCosts(const StepPlan& plan, double attention_pair_weight);

}  // namespace mmpt::plan
