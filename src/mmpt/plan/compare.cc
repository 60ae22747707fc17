#include "mmpt/plan/compare.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mmpt/pack/packing_bound.h"
#include "mmpt/plan/vanilla.h"

namespace mmpt::plan {
namespace {

// Accumulates one planner's steps into its figures.
class Tally {
 public:
  void Add(const StepPlan& plan, const StepStats& stats, uint32_t seq_len) {
    f_.packs += stats.packs;
    f_.lower_bound_packs += stats.lower_bound_packs;
    f_.tokens += stats.tokens;
    f_.placed += stats.placed;
    f_.images += plan.images.size();
    f_.video_items += plan.videos.size();
    f_.dropped += stats.dropped;
    f_.truncated += stats.truncated;
    f_.step_seconds += plan.estimate.step_seconds;
    f_.lower_bound_seconds += plan.estimate.lower_bound_seconds;
    const balance::Estimate& e = plan.estimate;
    f_.max_vision_imbalance =
        std::max(f_.max_vision_imbalance, e.max_encoder_imbalance[balance::kVisionEncoder]);
    f_.max_audio_imbalance =
        std::max(f_.max_audio_imbalance, e.max_encoder_imbalance[balance::kAudioEncoder]);
    f_.max_llm_imbalance = std::max(f_.max_llm_imbalance, e.max_llm_imbalance);
    sum_mean_v_ += e.mean_encoder_imbalance[balance::kVisionEncoder];
    sum_mean_a_ += e.mean_encoder_imbalance[balance::kAudioEncoder];
    sum_mean_l_ += e.mean_llm_imbalance;
    for (const PlannedPack& pack : plan.packs) f_.audio_seconds += pack.audio_seconds;
    f_.plan_seconds_per_step += stats.plan_seconds;
    f_.last_plan_hash = plan.Hash();
    seq_len_ = seq_len;
    ++steps_;
  }
  PlannerFigures Finish(uint32_t dp) {
    double total_seconds = f_.step_seconds;
    f_.efficiency = static_cast<double>(f_.tokens) / (static_cast<double>(f_.packs) * seq_len_);
    f_.tokens_per_second = total_seconds > 0 ? f_.tokens / total_seconds / dp : 0;
    f_.step_seconds /= steps_;
    f_.lower_bound_seconds /= steps_;
    f_.mean_vision_imbalance = sum_mean_v_ / steps_;
    f_.mean_llm_imbalance = sum_mean_l_ / steps_;
    f_.mean_audio_imbalance = sum_mean_a_ / steps_;
    f_.plan_seconds_per_step /= steps_;
    return f_;
  }

 private:
  PlannerFigures f_;
  double sum_mean_v_ = 0, sum_mean_a_ = 0, sum_mean_l_ = 0;
  uint32_t seq_len_ = 1;
  uint32_t steps_ = 0;
};

// PackingLimit of a run that placed `placed` (tokens each) in `packs` packs and carries `carried`.
Result<PackingLimit> Limit(std::vector<uint32_t> placed, std::span<const PlacedSample> carried,
                           uint64_t packs, uint32_t seq_len) {
  std::vector<uint32_t> carried_tokens;
  for (const PlacedSample& sample : carried) carried_tokens.push_back(sample.tokens);
  placed.insert(placed.end(), carried_tokens.begin(), carried_tokens.end());
  MMPT_ASSIGN_OR_RETURN(pack::PackingBound all, pack::BoundPacking(placed, seq_len));
  MMPT_ASSIGN_OR_RETURN(pack::PackingBound rest, pack::BoundPacking(carried_tokens, seq_len));
  uint64_t tokens = 0;
  for (uint32_t t : placed) tokens += t;
  PackingLimit limit;
  limit.bound = all.efficiency;
  const double rest_packs = carried_tokens.empty() ? 0 : std::ceil(rest.packs - 1e-6);
  limit.settled =
      static_cast<double>(tokens) / ((static_cast<double>(packs) + rest_packs) * seq_len);
  limit.carried = carried.size();
  limit.grain_tokens = all.grain_tokens;
  limit.seconds = all.seconds + rest.seconds;
  return limit;
}

}  // namespace

Result<Comparison> ComparePlanners(const cost::SampleTable& table, const cost::CostModel& model,
                                   const PlannerConfig& config, uint32_t steps) {
  if (steps == 0) return Status::InvalidArgument("--steps must be at least 1");
  MMPT_RETURN_IF_ERROR(config.Validate());
  MMPT_ASSIGN_OR_RETURN(VanillaPlanner vanilla, VanillaPlanner::Create(table, model, config));
  MMPT_ASSIGN_OR_RETURN(Planner mmpt, Planner::Create(table, model, config));
  Tally vanilla_tally, mmpt_tally;
  std::vector<uint32_t> placed_tokens;  // of every sample mmpt placed
  for (uint32_t s = 0; s < steps; ++s) {
    MMPT_ASSIGN_OR_RETURN(StepPlan v, vanilla.PlanStep());
    vanilla_tally.Add(v, vanilla.last_stats(), config.layout.seq_len);
    MMPT_ASSIGN_OR_RETURN(StepPlan m, mmpt.PlanStep());
    mmpt_tally.Add(m, mmpt.last_stats(), config.layout.seq_len);
    for (const PlannedSequence& seq : m.sequences) placed_tokens.push_back(seq.tokens);
  }
  Comparison c;
  c.steps = steps;
  c.layout = config.layout;
  c.vision = model.vision().name;
  c.llm = model.llm().name;
  c.hardware = model.hardware().name;
  c.samples = table.num_samples();
  for (uint32_t s = 0; s < table.num_sources(); ++s) {
    c.sources.push_back({table.source_names[s], table.source_size(s), mmpt.SourceShare(s)});
  }
  c.vanilla = vanilla_tally.Finish(config.layout.dp);
  c.vanilla_buffer = config.vanilla_buffer;
  c.vanilla_buffer_turnover = VanillaBufferTurnover(c.vanilla.placed, config);
  c.mmpt = mmpt_tally.Finish(config.layout.dp);
  MMPT_ASSIGN_OR_RETURN(c.mmpt_limit,
                        Limit(placed_tokens, mmpt.carried(), c.mmpt.packs, config.layout.seq_len));
  return c;
}

}  // namespace mmpt::plan
