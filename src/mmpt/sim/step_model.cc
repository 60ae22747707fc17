#include "mmpt/sim/step_model.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "mmpt/balance/balancer.h"
#include "mmpt/cp/pack_load.h"
#include "mmpt/plan/cp_stage.h"

namespace mmpt::sim {
namespace {

// Adds one pack's work to the times of its CP ranks (times has cp entries), as the plan's cp
// stage splits and assigns it (the loader executes the same): cp::PackRankLoads, the one cost
// of a pack under its layout, scaled by the model's speed and overheads.
// `floors` gets the pack's least stage times on its CP group: the atomic vision floor
// (cp::AtomicVisionFloor), the most-loaded rank's audio and LLM.
Status AddPack(const plan::StepPlan& plan, size_t pack_index, const SimParams& params,
               std::vector<RankTime>& times, StepSim& sim, std::vector<balance::PackCost>* floors) {
  const plan::PlannedPack& pack = plan.packs[pack_index];
  if (pack.sequence_begin == pack.sequence_end) return Status::OK();
  sim.tokens += pack.tokens;
  if (plan.cp.size() != plan.packs.size()) {
    return Status::InvalidArgument("the plan has no cp stage to evaluate (plan::AddCpStage)");
  }
  const plan::PackCp& pack_cp = plan.cp[pack_index];
  const bool over_cp = plan.layout.cp > 1;
  const std::vector<cp::RankLoad> loads = cp::PackRankLoads(
      pack_cp.split, pack_cp.vision, pack_cp.audio, pack.llm_seconds, params.attention_pair_weight);
  const double llm_factor = over_cp ? 1.0 + params.cp_llm_overhead : 1.0;
  const bool exchanged = over_cp && pack_cp.vision.policy != cp::VisionPolicy::kNaive;
  const double vision_factor =
      (exchanged ? 1.0 + params.vision_dp_exchange_overhead : 1.0) / params.vision_speed_factor;
  for (size_t r = 0; r < loads.size(); ++r) {
    RankTime& t = times[r];
    t.vision_seconds += loads[r].vision * vision_factor;
    t.audio_seconds += loads[r].audio;
    t.llm_seconds += loads[r].llm * llm_factor;
    t.attention_pairs += loads[r].attention_pairs;
    sim.vision_gpu_seconds += loads[r].vision * vision_factor;
    sim.audio_gpu_seconds += loads[r].audio;
    sim.llm_gpu_seconds += loads[r].llm * llm_factor;
  }
  // Indivisible items: the CP group waits for the larger of its mean and its largest item.
  const double vision_floor = cp::AtomicVisionFloor(loads, pack_cp.vision) * vision_factor;
  sim.atomic_vision_gpu_seconds += vision_floor * static_cast<double>(loads.size());
  const cp::RankLoad most = cp::MostLoaded(loads);
  floors->emplace_back(std::array<double, balance::kNumEncoders>{vision_floor, most.audio},
                       most.llm * llm_factor);
  if (over_cp && pack.vision_seconds > 0) {
    sim.cp_vision_imbalance.push_back(pack_cp.vision.max_cost() * plan.layout.cp /
                                      pack.vision_seconds);
  }
  return Status::OK();
}

}  // namespace

Status SimParams::Validate() const {
  if (!(vision_speed_factor > 0)) {
    return Status::InvalidArgument("vision_speed_factor must be > 0, got {}", vision_speed_factor);
  }
  for (auto [name, value] : {std::pair{"cp_llm_overhead", cp_llm_overhead},
                             {"vision_dp_exchange_overhead", vision_dp_exchange_overhead},
                             {"attention_pair_weight", attention_pair_weight},
                             {"microstep_overhead_seconds", microstep_overhead_seconds},
                             {"grad_allreduce_seconds", grad_allreduce_seconds}}) {
    if (!(value >= 0) || std::isinf(value)) {
      return Status::InvalidArgument("{} must be finite and >= 0, got {}", name, value);
    }
  }
  return Status::OK();
}

std::string SimParams::Describe() const {
  std::string out;
  auto line = [&](std::string_view name, std::string value, std::string_view meaning) {
    out += fmt::format("  {:<28} = {:<10} {}\n", name, value, meaning);
  };
  line("vision_speed_factor", fmt::format("{:g}", vision_speed_factor),
       "encoder speed-up over the costed encoder (assumed)");
  line("cp_llm_overhead", fmt::format("{:g}", cp_llm_overhead),
       "LLM time added per CP rank for unhidden KV exchange (assumed)");
  line("vision_dp_exchange_overhead", fmt::format("{:g}", vision_dp_exchange_overhead),
       "vision time added for the vision-DP embedding exchange (assumed)");
  line("attention_pair_weight", fmt::format("{:.3g}", attention_pair_weight),
       "LLM work of one causal pair / one token's linear work");
  line("microstep_overhead_seconds", fmt::format("{:g}", microstep_overhead_seconds),
       "fixed cost per micro-step");
  line("grad_allreduce_seconds", fmt::format("{:g}", grad_allreduce_seconds),
       "unhidden gradient all-reduce per step");
  return out;
}

Result<double> SyncedSeconds(const plan::Layout& layout, std::span<const RankTime> ranks) {
  const size_t groups = size_t{layout.dp} * layout.ga;
  if (ranks.size() != groups * layout.cp) {
    return Status::InvalidArgument("{} rank times for DP {} x GA {} x CP {}", ranks.size(),
                                   layout.dp, layout.ga, layout.cp);
  }
  // The DP ranks wait for each other as the balancer's model says: one "pack" per
  // (rank, micro-step) holding the CP group's slowest shard of each encoder and of the LLM.
  std::vector<balance::PackCost> group_costs(groups);
  std::vector<uint32_t> identity(groups);
  for (size_t i = 0; i < groups; ++i) {
    std::array<double, balance::kNumEncoders> encoders{};
    double llm = 0;
    for (const RankTime& t : ranks.subspan(i * layout.cp, layout.cp)) {
      encoders[balance::kVisionEncoder] =
          std::max(encoders[balance::kVisionEncoder], t.vision_seconds);
      encoders[balance::kAudioEncoder] =
          std::max(encoders[balance::kAudioEncoder], t.audio_seconds);
      llm = std::max(llm, t.llm_seconds);
    }
    group_costs[i] = balance::PackCost(encoders, llm);
    identity[i] = static_cast<uint32_t>(i);
  }
  balance::Grid grid = layout.BalanceGrid();
  grid.mbs = 1;  // one cost per (rank, micro-step): its packs' sums
  MMPT_RETURN_IF_ERROR(grid.Validate());
  return balance::Evaluate(group_costs, identity, grid).step_seconds;
}

Result<StepSim> SimulateStep(const plan::StepPlan& plan, const SimParams& params) {
  MMPT_RETURN_IF_ERROR(params.Validate());
  MMPT_RETURN_IF_ERROR(plan.layout.Validate());
  MMPT_RETURN_IF_ERROR(plan.Validate());
  const plan::Layout& layout = plan.layout;
  StepSim sim;
  sim.dp = layout.dp;
  sim.ga = layout.ga;
  sim.cp = layout.cp;
  sim.ranks.assign(size_t{layout.dp} * layout.ga * layout.cp, RankTime{});

  std::vector<RankTime> times(layout.cp);
  std::vector<balance::PackCost> floors;
  for (uint32_t d = 0; d < layout.dp; ++d) {
    for (uint32_t m = 0; m < layout.ga; ++m) {
      std::fill(times.begin(), times.end(), RankTime{});
      for (uint32_t slot = 0; slot < layout.mbs; ++slot) {
        Status status = AddPack(plan, plan.PackIndex(d, m, slot), params, times, sim, &floors);
        if (!status.ok()) {
          return status.WithContext(
              fmt::format("step {} rank {} micro-step {} pack {}", plan.step, d, m, slot));
        }
      }
      std::copy(times.begin(), times.end(),
                sim.ranks.begin() + (size_t{d} * layout.ga + m) * layout.cp);
    }
  }
  MMPT_ASSIGN_OR_RETURN(const double slowest, SyncedSeconds(layout, sim.ranks));
  const double overhead =
      params.microstep_overhead_seconds * layout.ga + params.grad_allreduce_seconds;
  sim.step_seconds = slowest + overhead;
  const double gpus = static_cast<double>(layout.dp) * layout.cp;
  const double other = sim.audio_gpu_seconds + sim.llm_gpu_seconds;
  sim.lower_bound_seconds = (sim.vision_gpu_seconds + other) / gpus + overhead;
  // Indivisible items and packs: every GPU busy with each pack's CP group waiting for its
  // largest item, or (micro-step sync) each micro-step waiting for its heaviest packs.
  sim.atomic_lower_bound_seconds =
      std::max((sim.atomic_vision_gpu_seconds + other) / gpus,
               balance::MicrostepLowerBound(floors, layout.BalanceGrid())) +
      overhead;
  return sim;
}

}  // namespace mmpt::sim
