#include "mmpt/sim/step_model.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "mmpt/balance/balancer.h"
#include "mmpt/cp/thd_split.h"
#include "mmpt/plan/cp_stage.h"

namespace mmpt::sim {
namespace {

// Causal (query, key) pairs of query positions [begin, end) of a sequence: Σ (q + 1).
double CausalPairs(uint64_t begin, uint64_t end) {
  if (end <= begin) return 0;
  return (static_cast<double>(end) * (end + 1) - static_cast<double>(begin) * (begin + 1)) / 2;
}

// Adds one pack's work to the times of its CP ranks (times has cp entries).
Status AddPack(const plan::StepPlan& plan, size_t pack_index, const SimParams& params,
               std::vector<RankTime>& times, StepSim& sim) {
  const plan::PlannedPack& pack = plan.packs[pack_index];
  const uint32_t cp = plan.layout.cp;
  auto sequences = plan.Sequences(pack);
  if (sequences.empty()) return Status::OK();
  sim.tokens += pack.tokens;

  if (plan.cp.size() != plan.packs.size()) {
    return Status::InvalidArgument("the plan has no cp stage to evaluate (plan::AddCpStage)");
  }
  // The plan's own split and vision assignment (in the plan's encoder seconds), evaluated as
  // they are: the loader executes the same ones.
  const plan::PackCp& pack_cp = plan.cp[pack_index];
  const cp::ThdSplit& split = pack_cp.split;
  const cp::EncoderAssignment& assignment = pack_cp.vision;
  const double speed = params.vision_speed_factor;
  if (cp == 1) {
    const double vision_seconds = pack.vision_seconds / speed;
    times[0].vision_seconds += vision_seconds;
    times[0].llm_seconds += pack.llm_seconds;
    for (const plan::PlannedSequence& seq : sequences) {
      times[0].attention_pairs += CausalPairs(0, seq.tokens);
    }
    times[0].audio_seconds += pack.audio_seconds;
    sim.audio_gpu_seconds += pack.audio_seconds;
    sim.vision_gpu_seconds += vision_seconds;
    sim.llm_gpu_seconds += pack.llm_seconds;
    return Status::OK();
  }
  std::vector<uint32_t> lengths;
  for (const plan::PlannedSequence& seq : sequences) lengths.push_back(seq.tokens);
  const double exchange = assignment.policy == cp::VisionPolicy::kNaive
                              ? 1.0
                              : 1.0 + params.vision_dp_exchange_overhead;

  // LLM work of each rank: its real tokens plus weighted causal pairs of its chunks.
  std::vector<double> work(cp, 0.0), pairs(cp, 0.0);
  double total_work = 0;
  for (size_t s = 0; s < lengths.size(); ++s) {
    const uint64_t chunk = split.chunk_tokens(s);
    for (uint32_t k = 0; k < 2 * cp; ++k) {
      const uint64_t begin = std::min<uint64_t>(k * chunk, lengths[s]);
      const uint64_t end = std::min<uint64_t>((k + 1) * chunk, lengths[s]);
      const double w =
          static_cast<double>(end - begin) + params.attention_pair_weight * CausalPairs(begin, end);
      work[split.ChunkRank(k)] += w;
      pairs[split.ChunkRank(k)] += CausalPairs(begin, end);
      total_work += w;
    }
  }
  for (uint32_t r = 0; r < cp; ++r) {
    const double llm =
        total_work > 0 ? pack.llm_seconds * work[r] / total_work * (1.0 + params.cp_llm_overhead)
                       : 0.0;
    const double vision = assignment.rank_cost[r] / speed * exchange;
    // Audio clips go to CP ranks by the plan's audio assignment (no ranks: no audio).
    const double audio = pack_cp.audio.rank_cost.empty() ? 0.0 : pack_cp.audio.rank_cost[r];
    times[r].audio_seconds += audio;
    sim.audio_gpu_seconds += audio;
    times[r].vision_seconds += vision;
    times[r].llm_seconds += llm;
    times[r].attention_pairs += pairs[r];
    sim.vision_gpu_seconds += vision;
    sim.llm_gpu_seconds += llm;
  }
  if (pack.vision_seconds > 0) {
    sim.cp_vision_imbalance.push_back(assignment.max_cost() * cp / pack.vision_seconds);
  }
  return Status::OK();
}

}  // namespace

double AttentionPairWeight(const cost::LlmConfig& llm, const cost::HardwareConfig& hardware) {
  constexpr uint64_t kLength = 4096;  // any length: the attention FLOPs are exactly ∝ pairs
  const double pairs = static_cast<double>(kLength) * (kLength + 1) / 2;
  const double linear = llm.LinearTrainFlopsPerToken();
  const double flops_weight = linear > 0 ? llm.AttentionTrainFlops(kLength) / pairs / linear : 0.0;
  return flops_weight * hardware.mfu / hardware.AttentionMfu();
}

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
  const balance::Grid grid{.dp = layout.dp,
                           .ga = layout.ga,
                           .mbs = 1,
                           .group = layout.sync_group_size(),
                           .pp = layout.pp,
                           .sync = layout.sync};
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
  for (uint32_t d = 0; d < layout.dp; ++d) {
    for (uint32_t m = 0; m < layout.ga; ++m) {
      std::fill(times.begin(), times.end(), RankTime{});
      for (uint32_t slot = 0; slot < layout.mbs; ++slot) {
        Status status = AddPack(plan, plan.PackIndex(d, m, slot), params, times, sim);
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
  sim.lower_bound_seconds = (sim.vision_gpu_seconds + sim.audio_gpu_seconds + sim.llm_gpu_seconds) /
                                (static_cast<double>(layout.dp) * layout.cp) +
                            overhead;
  return sim;
}

}  // namespace mmpt::sim
