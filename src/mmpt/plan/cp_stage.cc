#include "mmpt/plan/cp_stage.h"

#include <fmt/format.h>

#include "mmpt/cp/image_layout.h"

namespace mmpt::plan {

Result<PackCpInput> MakePackCpInput(const StepPlan& plan, size_t pack,
                                    double vision_speed_factor) {
  const PlannedPack& p = plan.packs[pack];
  auto sequences = plan.Sequences(p);
  double pack_flops = 0;
  for (const auto& seq : sequences) {
    for (const auto& image : plan.Images(seq)) pack_flops += image.vision_flops;
  }
  const double vision_seconds = p.vision_seconds / vision_speed_factor;
  PackCpInput input;
  input.lengths.reserve(sequences.size());
  std::vector<cp::SampleImage> images;
  for (uint32_t s = 0; s < sequences.size(); ++s) {
    input.lengths.push_back(sequences[s].tokens);
    for (const auto& image : plan.Images(sequences[s])) {
      // An image's share of the pack's encoder time is its share of the pack's vision FLOPs.
      const double seconds =
          pack_flops > 0 ? vision_seconds * image.vision_flops / pack_flops : 0.0;
      images.push_back({s, image.llm_tokens, seconds});
    }
  }
  auto placed = cp::PlaceImages(input.lengths, images);
  if (!placed.ok()) return placed.status().WithContext(fmt::format("pack {}", pack));
  input.images = std::move(*placed);
  return input;
}

cp::ThdSplitOptions SplitOptions(const Layout& layout, bool with_token_indices) {
  return cp::ThdSplitOptions{.cp_size = layout.cp, .tp_size = layout.tp,
                             .sequence_parallel = layout.tp > 1,
                             .with_token_indices = with_token_indices};
}

Status AddCpStage(StepPlan& plan, cp::VisionPolicy policy, bool with_token_indices) {
  plan.cp.clear();
  if (plan.layout.cp <= 1) return Status::OK();
  plan.cp.resize(plan.packs.size());
  const cp::ThdSplitOptions options = SplitOptions(plan.layout, with_token_indices);
  for (size_t p = 0; p < plan.packs.size(); ++p) {
    if (plan.packs[p].sequence_begin == plan.packs[p].sequence_end) continue;  // empty slot
    MMPT_ASSIGN_OR_RETURN(PackCpInput input, MakePackCpInput(plan, p));
    auto split = cp::SplitThd(input.lengths, options);
    if (!split.ok()) return split.status().WithContext(fmt::format("pack {}", p));
    auto vision = cp::AssignVision(*split, input.images, policy);
    if (!vision.ok()) return vision.status().WithContext(fmt::format("pack {}", p));
    plan.cp[p].split = std::move(*split);
    plan.cp[p].vision = std::move(*vision);
  }
  return Status::OK();
}

}  // namespace mmpt::plan
