#include "mmpt/plan/vanilla.h"

#include <chrono>

#include "mmpt/pack/packer.h"
#include "mmpt/plan/cp_stage.h"
#include "mmpt/plan/pack_list_internal.h"

namespace mmpt::plan {

VanillaPlanner::VanillaPlanner(const cost::SampleTable& table, const cost::CostModel& model,
                               PlannerConfig config, SampleOrder order)
    : table_(&table),
      model_(&model),
      config_(std::move(config)),
      order_(std::move(order)),
      buffers_(config_.layout.dp),
      ready_(config_.layout.dp) {}

Result<VanillaPlanner> VanillaPlanner::Create(const cost::SampleTable& table,
                                              const cost::CostModel& model, PlannerConfig config) {
  MMPT_RETURN_IF_ERROR(config.Validate());
  std::vector<uint64_t> sizes(table.num_sources());
  for (size_t s = 0; s < sizes.size(); ++s) sizes[s] = table.source_size(s);
  MMPT_ASSIGN_OR_RETURN(SampleOrder order,
                        SampleOrder::Create(sizes, config.source_weights, config.seed));
  MMPT_RETURN_IF_ERROR(internal::PlaceableCounter(table, model, config).Start(order, 1));
  return VanillaPlanner(table, model, std::move(config), std::move(order));
}

Status VanillaPlanner::FlushBuffer(uint32_t rank) {
  auto& buffer = buffers_[rank];
  std::vector<pack::PackItem> items(buffer.size());
  for (size_t i = 0; i < buffer.size(); ++i) items[i] = {buffer[i].tokens, buffer[i].images};
  pack::PackConstraints constraints{config_.layout.seq_len, config_.max_samples_per_pack,
                                    config_.max_images_per_pack};
  MMPT_ASSIGN_OR_RETURN(pack::Packing packing,
                        pack::PackItems(items, constraints, pack::Algorithm::kFirstFitDecreasing));
  for (size_t p = 0; p < packing.num_packs(); ++p) {
    std::vector<PlacedSample> pack;
    for (uint32_t i : packing.Pack(p)) pack.push_back(buffer[i]);
    ready_[rank].push_back(std::move(pack));
  }
  buffer.clear();
  return Status::OK();
}

Result<StepPlan> VanillaPlanner::PlanStep() {
  auto start = std::chrono::steady_clock::now();
  stats_ = StepStats{};
  const Layout& layout = config_.layout;
  const uint32_t per_rank = layout.ga * layout.mbs;
  std::vector<uint64_t> dropped_rows;
  auto short_of_packs = [&] {
    for (uint32_t r = 0; r < layout.dp; ++r) {
      if (ready_[r].size() < per_rank) return true;
    }
    return false;
  };
  while (short_of_packs()) {
    MMPT_ASSIGN_OR_RETURN(const std::optional<PlacedSample> drawn,
                          internal::FitDraw(order_.Next(), *table_, *model_, config_, &stats_,
                                            &dropped_rows, nullptr));
    if (!drawn) continue;
    uint32_t rank = static_cast<uint32_t>(dealt_++ % layout.dp);
    buffers_[rank].push_back(*drawn);
    if (buffers_[rank].size() >= config_.vanilla_buffer) MMPT_RETURN_IF_ERROR(FlushBuffer(rank));
  }
  // Each rank trains on its next ga × mbs packs in the order its packer made them. A sample
  // may have waited in a rank's buffer for several steps: its items are placed again here.
  internal::PackList packs;
  internal::PoolMedia media;
  for (uint32_t r = 0; r < layout.dp; ++r) {
    for (uint32_t k = 0; k < per_rank; ++k) {
      for (const auto& s : ready_[r].front()) {
        MMPT_ASSIGN_OR_RETURN(internal::FittedRow placed,
                              internal::FitRow(*table_, *model_, config_, s.source, s.row, &media));
        packs.samples.push_back(placed.sample);
        stats_.tokens += s.tokens;
      }
      packs.Close();
      ready_[r].pop_front();
    }
  }
  std::vector<uint32_t> assignment(packs.size());
  for (uint32_t i = 0; i < assignment.size(); ++i) assignment[i] = i;
  std::vector<balance::PackCost> costs = internal::CostPacks(packs, *model_, layout.seq_len);
  StepPlan plan =
      internal::Assemble(step_, layout, packs, assignment, costs, *table_, media, dropped_rows, {});
  MMPT_RETURN_IF_ERROR(AddCpStage(plan, cp::VisionPolicy::kCount));
  // Estimated as mmpt's plans are: under CP what each pack's CP group pays.
  plan.estimate =
      balance::Evaluate(layout.cp > 1 ? CpPackCosts(plan, model_->AttentionPairWeight()) : costs,
                        assignment, layout.BalanceGrid());

  stats_.dropped = dropped_rows.size();
  stats_.packs = packs.size();
  stats_.placed = packs.samples.size();
  for (uint32_t r = 0; r < layout.dp; ++r) {
    stats_.carried += buffers_[r].size();
    for (const auto& pack : ready_[r]) stats_.carried += pack.size();
  }
  stats_.lower_bound_packs = (stats_.tokens + layout.seq_len - 1) / layout.seq_len;
  stats_.efficiency =
      static_cast<double>(stats_.tokens) / (static_cast<double>(stats_.packs) * layout.seq_len);
  ++step_;
  stats_.plan_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

double VanillaBufferTurnover(uint64_t placed_samples, const PlannerConfig& config) {
  return static_cast<double>(placed_samples) / config.layout.dp / config.vanilla_buffer;
}

}  // namespace mmpt::plan
