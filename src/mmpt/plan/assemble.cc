#include "mmpt/plan/assemble_internal.h"

#include <algorithm>

#include <fmt/format.h>

namespace mmpt::plan::internal {

pack::Fitted FitRow(const cost::SampleTable& table, const cost::CostedSamples& costs,
                    const PlannerConfig& config, uint64_t row) {
  pack::Fitted fit = pack::FitToLength(table.text_tokens[row], costs.image_tokens[row],
                                       config.layout.seq_len, config.overlong);
  if (config.max_images_per_pack != 0 &&
      table.image_begin[row + 1] - table.image_begin[row] > config.max_images_per_pack) {
    fit = pack::Fitted{.dropped = true};
  }
  return fit;
}

std::optional<Drawn> DrawNext(SampleOrder& order, const cost::SampleTable& table,
                              const cost::CostedSamples& costs, const PlannerConfig& config,
                              StepStats* stats, std::vector<uint64_t>* dropped_rows) {
  const SampleOrder::Draw draw = order.Next();
  const uint64_t row = table.source_begin[draw.source] + draw.index;
  ++stats->drawn;
  const pack::Fitted fit = FitRow(table, costs, config, row);
  if (fit.dropped) {
    dropped_rows->push_back(row);
    return std::nullopt;
  }
  stats->truncated += fit.truncated;
  return Drawn{draw.source, {row, fit.tokens, fit.text_tokens}};
}

Result<std::vector<Placeable>> PlaceableBySource(const cost::SampleTable& table,
                                                 const cost::CostedSamples& costs,
                                                 const PlannerConfig& config,
                                                 const SampleOrder& order) {
  std::vector<Placeable> placeable(table.num_sources());
  uint64_t total = 0;
  for (uint32_t s = 0; s < table.num_sources(); ++s) {
    if (order.Share(s) == 0) continue;
    for (uint64_t row = table.source_begin[s]; row < table.source_begin[s + 1]; ++row) {
      const pack::Fitted fit = FitRow(table, costs, config, row);
      placeable[s].samples += !fit.dropped;
      placeable[s].tokens += fit.tokens;
    }
    total += placeable[s].samples;
  }
  if (total == 0) {
    return Status::InvalidArgument(
        "every sample of the corpus is dropped: none fits seq_len {} under the '{}' policy{}",
        config.layout.seq_len, pack::OverlongPolicyName(config.overlong),
        config.max_images_per_pack == 0
            ? ""
            : fmt::format(" with at most {} images", config.max_images_per_pack));
  }
  return placeable;
}

balance::Grid GridOf(const Layout& layout) {
  return balance::Grid{layout.dp, layout.ga, layout.mbs, layout.ep, layout.pp, layout.sync};
}

std::vector<balance::PackCost> CostPacks(const PackList& packs, const cost::CostedSamples& costs,
                                         const cost::CostModel& model, uint32_t seq_len) {
  std::vector<balance::PackCost> out(packs.size());
  for (size_t p = 0; p < packs.size(); ++p) {
    uint32_t tokens = 0;
    for (const PlacedSample& s : packs.Pack(p)) {
      out[p].vision += costs.vision_seconds[s.row];
      out[p].llm += model.SequenceLlmSeconds(s.tokens);
      tokens += s.tokens;
    }
    out[p].llm += model.PaddingLlmSeconds(seq_len - tokens);
  }
  return out;
}

StepPlan Assemble(uint64_t step, const Layout& layout, const PackList& packs,
                  std::span<const uint32_t> assignment, std::span<const balance::PackCost> costs,
                  const cost::SampleTable& table, const cost::CostedSamples& costed,
                  std::span<const uint64_t> dropped_rows) {
  StepPlan plan;
  plan.step = step;
  plan.layout = layout;
  plan.packs.reserve(assignment.size());
  plan.sequences.reserve(packs.samples.size());
  size_t num_images = 0;
  for (const PlacedSample& s : packs.samples) {
    num_images += table.image_begin[s.row + 1] - table.image_begin[s.row];
  }
  plan.images.reserve(num_images);
  for (uint32_t p : assignment) {
    PlannedPack pack;
    pack.sequence_begin = static_cast<uint32_t>(plan.sequences.size());
    for (const PlacedSample& s : packs.Pack(p)) {
      PlannedSequence seq;
      seq.source = table.SourceOfRow(s.row);
      seq.index = s.row - table.source_begin[seq.source];
      seq.tokens = s.tokens;
      seq.text_tokens = s.text_tokens;
      seq.truncated = s.text_tokens < table.text_tokens[s.row];
      seq.image_begin = static_cast<uint32_t>(plan.images.size());
      uint64_t first = table.image_begin[s.row];
      uint32_t image_tokens_before = 0;
      for (uint64_t i = first; i < table.image_begin[s.row + 1]; ++i) {
        const cost::ImageCost& c = costed.images[i];
        const uint32_t text_before = std::min(table.image_text_positions[i], s.text_tokens);
        plan.images.push_back(PlannedImage{static_cast<uint32_t>(i - first), table.images[i].width,
                                           table.images[i].height, c.resized_width,
                                           c.resized_height, c.llm_tokens,
                                           text_before + image_tokens_before, c.patches,
                                           c.train_flops});
        image_tokens_before += c.llm_tokens;
      }
      seq.image_end = static_cast<uint32_t>(plan.images.size());
      pack.tokens += s.tokens;
      pack.images += seq.image_end - seq.image_begin;
      plan.sequences.push_back(seq);
    }
    pack.sequence_end = static_cast<uint32_t>(plan.sequences.size());
    pack.vision_seconds = costs[p].vision;
    pack.llm_seconds = costs[p].llm;
    plan.packs.push_back(pack);
  }
  plan.dropped.reserve(dropped_rows.size());
  for (uint64_t row : dropped_rows) {
    const uint32_t source = table.SourceOfRow(row);
    plan.dropped.push_back({source, row - table.source_begin[source]});
  }
  return plan;
}

}  // namespace mmpt::plan::internal
