#include "mmpt/plan/cp_stage.h"

#include <algorithm>

#include <fmt/format.h>

#include "mmpt/cp/pack_load.h"

namespace mmpt::plan {

std::vector<uint32_t> VisionItemOrder(std::span<const uint8_t> is_video) {
  std::vector<uint32_t> order(is_video.size());
  for (uint32_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_partition(order.begin(), order.end(), [&](uint32_t k) { return !is_video[k]; });
  return order;
}

PackCpInput MakePackCpInput(const StepPlan& plan, size_t pack, std::span<const uint8_t> kept) {
  const PlannedPack& p = plan.packs[pack];
  auto sequences = plan.Sequences(p);
  double pack_flops = 0, pack_audio_flops = 0;
  for (const auto& seq : sequences) {
    for (const auto& image : plan.Images(seq)) pack_flops += image.vision_flops;
    for (const auto& video : plan.Videos(seq)) pack_flops += video.vision_flops;
    for (const auto& audio : plan.Audios(seq)) pack_audio_flops += audio.audio_flops;
  }
  // An item's share of the pack's encoder time is its share of that encoder's FLOPs.
  auto share = [](double seconds, double flops, double total) {
    return total > 0 ? seconds * flops / total : 0.0;
  };
  PackCpInput input;
  input.lengths.reserve(sequences.size());
  input.padding.reserve(sequences.size());
  std::vector<cp::CpImage> items;  // images and videos, in pack order
  std::vector<uint8_t> is_video;
  items.reserve(p.images);
  is_video.reserve(p.images);
  uint32_t sequence_start = 0;
  for (size_t q = 0; q < sequences.size(); ++q) {
    if (!kept.empty() && kept[q] == 0) continue;
    const PlannedSequence& seq = sequences[q];
    input.lengths.push_back(seq.tokens);
    input.padding.push_back(seq.cp_padding);
    for (const PlannedImage& image : plan.Images(seq)) {
      items.push_back({sequence_start + image.token_start, image.llm_tokens,
                       share(p.vision_seconds, image.vision_flops, pack_flops)});
      is_video.push_back(0);
    }
    for (const PlannedVideo& video : plan.Videos(seq)) {
      items.push_back({sequence_start + video.token_start, video.llm_tokens,
                       share(p.vision_seconds, video.vision_flops, pack_flops)});
      is_video.push_back(1);
    }
    for (std::span<const PlannedAudio> clip : AudioClips(plan.Audios(seq))) {
      cp::CpImage item{sequence_start + clip[0].token_start, clip[0].llm_tokens, 0};
      double flops = 0;
      for (const PlannedAudio& part : clip) {
        flops += part.audio_flops;
        if (&part != &clip[0]) {
          item.more_runs.push_back({sequence_start + part.token_start, part.llm_tokens});
        }
      }
      item.vision_cost = share(p.audio_seconds, flops, pack_audio_flops);
      input.audio.push_back(std::move(item));
    }
    sequence_start += seq.tokens;
  }
  if (std::find(is_video.begin(), is_video.end(), 1) == is_video.end()) {
    input.images = std::move(items);  // images alone: already in their order
  } else {
    for (uint32_t k : VisionItemOrder(is_video)) input.images.push_back(items[k]);
  }
  return input;
}

Result<PackCp> PlanPackCp(const Layout& layout, const PackCpInput& input, cp::VisionPolicy policy) {
  PackCp out;
  MMPT_ASSIGN_OR_RETURN(out.split,
                        cp::SplitThd(input.lengths, layout.SplitOptions(), input.padding));
  MMPT_ASSIGN_OR_RETURN(out.vision, cp::AssignVision(out.split, input.images, policy));
  if (!input.audio.empty()) {
    auto assigned = cp::AssignVision(out.split, input.audio, policy);
    if (!assigned.ok()) return assigned.status().WithContext("audio");
    out.audio = std::move(*assigned);
  }
  return out;
}

Status AddCpStage(StepPlan& plan, cp::VisionPolicy policy) {
  // Entries already there (a recycled plan's) are overwritten: their memory returns to the heap
  // as the new ones take it.
  plan.cp.resize(plan.packs.size());
  for (size_t p = 0; p < plan.packs.size(); ++p) {
    if (plan.packs[p].sequence_begin == plan.packs[p].sequence_end) {  // empty slot
      plan.cp[p] = PackCp{};
      continue;
    }
    const PackCpInput input = MakePackCpInput(plan, p);
    auto made = PlanPackCp(plan.layout, input, policy);
    if (!made.ok()) return made.status().WithContext(fmt::format("pack {}", p));
    plan.cp[p] = std::move(*made);
  }
  return Status::OK();
}

std::vector<balance::PackCost> CpPackCosts(const StepPlan& plan, double attention_pair_weight) {
  std::vector<balance::PackCost> costs(plan.packs.size());
  for (size_t p = 0; p < plan.packs.size(); ++p) {
    const PackCp& pack_cp = plan.cp[p];
    if (pack_cp.split.cu_seqlens.empty()) continue;  // empty slot
    const cp::RankLoad most =
        cp::MostLoaded(cp::PackRankLoads(pack_cp.split, pack_cp.vision, pack_cp.audio,
                                         plan.packs[p].llm_seconds, attention_pair_weight));
    costs[p].encoder[balance::kVisionEncoder] = most.vision;
    costs[p].encoder[balance::kAudioEncoder] = most.audio;
    costs[p].llm = most.llm;
  }
  return costs;
}

}  // namespace mmpt::plan
