#include "mmpt/plan/cp_stage.h"

#include <fmt/format.h>

namespace mmpt::plan {

PackCpInput MakePackCpInput(const StepPlan& plan, size_t pack, std::span<const uint8_t> kept) {
  const PlannedPack& p = plan.packs[pack];
  auto sequences = plan.Sequences(p);
  double pack_flops = 0;
  for (const auto& seq : sequences) {
    for (const auto& image : plan.Images(seq)) pack_flops += image.vision_flops;
  }
  PackCpInput input;
  input.lengths.reserve(sequences.size());
  uint32_t sequence_start = 0;
  for (size_t q = 0; q < sequences.size(); ++q) {
    if (!kept.empty() && kept[q] == 0) continue;
    const PlannedSequence& seq = sequences[q];
    input.lengths.push_back(seq.tokens);
    for (const PlannedImage& image : plan.Images(seq)) {
      // An image's share of the pack's encoder time is its share of the pack's vision FLOPs.
      const double seconds =
          pack_flops > 0 ? p.vision_seconds * image.vision_flops / pack_flops : 0.0;
      input.images.push_back({sequence_start + image.token_start, image.llm_tokens, seconds});
    }
    sequence_start += seq.tokens;
  }
  return input;
}

cp::ThdSplitOptions SplitOptions(const Layout& layout) {
  return cp::ThdSplitOptions{.cp_size = layout.cp, .tp_size = layout.tp,
                             .sequence_parallel = layout.tp > 1, .with_token_indices = false};
}

Result<PackCp> PlanPackCp(const Layout& layout, std::span<const uint32_t> lengths,
                          std::span<const cp::CpImage> images, cp::VisionPolicy policy) {
  PackCp out;
  MMPT_ASSIGN_OR_RETURN(out.split, cp::SplitThd(lengths, SplitOptions(layout)));
  MMPT_ASSIGN_OR_RETURN(out.vision, cp::AssignVision(out.split, images, policy));
  return out;
}

Status AddCpStage(StepPlan& plan, cp::VisionPolicy policy) {
  plan.cp.assign(plan.packs.size(), PackCp{});
  for (size_t p = 0; p < plan.packs.size(); ++p) {
    if (plan.packs[p].sequence_begin == plan.packs[p].sequence_end) continue;  // empty slot
    const PackCpInput input = MakePackCpInput(plan, p);
    auto made = PlanPackCp(plan.layout, input.lengths, input.images, policy);
    if (!made.ok()) return made.status().WithContext(fmt::format("pack {}", p));
    plan.cp[p] = std::move(*made);
  }
  return Status::OK();
}

}  // namespace mmpt::plan
