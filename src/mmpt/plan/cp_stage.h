#pragma once

#include <cstddef>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cp/thd_split.h"
#include "mmpt/cp/vision_assign.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::plan {

/// What the cp stage needs of one pack: its sub-sequence lengths and its images, placed among
/// each sample's text (cp::PlaceImages), with their encoder seconds (the pack's vision seconds
/// shared by vision FLOPs, divided by `vision_speed_factor`).
struct PackCpInput {
  std::vector<uint32_t> lengths;
  std::vector<cp::CpImage> images;
};

/// Build the cp stage's input for pack `pack` of `plan`. Errors: InvalidArgument when a
/// sample's images hold more tokens than the sample (naming the pack).
Result<PackCpInput> MakePackCpInput(const StepPlan& plan, size_t pack,
                                    double vision_speed_factor = 1.0);

/// The split options the layout implies: CP size, and sequence parallelism (2·TP·CP padding)
/// whenever TP > 1.
cp::ThdSplitOptions SplitOptions(const Layout& layout, bool with_token_indices);

/// Split every pack of `plan` over its CP group and assign its images under `policy`, filling
/// plan.cp (one entry per pack; cleared when layout.cp == 1). Errors: those of
/// MakePackCpInput, cp::SplitThd and cp::AssignVision, naming the pack.
Status AddCpStage(StepPlan& plan, cp::VisionPolicy policy, bool with_token_indices = false);

}  // namespace mmpt::plan
