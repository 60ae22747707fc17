#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cost/llm_model.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::sim {

/// Every assumption of the step-time model, by name. The planner's cost model gives each pack's
/// vision and LLM seconds; these parameters say how ranks overlap, wait and communicate. Print
/// them with every result (Describe) so a measured value can replace any of them.
struct SimParams {
  /// Speed of the encoder run over the one the plans were costed for: vision seconds are
  /// divided by it. 1 = the costed encoder; the ablation's stages before '+ native encoder'
  /// set 1 / native_encoder_factor (the Hugging Face-style encoder, measured per device).
  double vision_speed_factor = 1.0;
  /// Fraction of a CP rank's LLM time added for the ring exchange of keys and values that
  /// attention compute does not hide (only when CP > 1).
  double cp_llm_overhead = 0.05;
  /// Fraction of a CP group's vision time added for the embedding exchange of vision DP (the
  /// all-to-all of rows forward, their gradients backward; only with count/cost and CP > 1).
  double vision_dp_exchange_overhead = 0.02;
  /// Weight of one causal attention (query, key) pair relative to one token's linear-layer work
  /// in the LLM; splits a pack's LLM seconds over its CP shards. Set it from the LLM preset
  /// with cost::CostModel::AttentionPairWeight(); 0 splits by tokens alone.
  double attention_pair_weight = 0.0;
  /// Fixed cost of every micro-step (launches, data hand-off), seconds.
  double microstep_overhead_seconds = 0.0;
  /// Gradient all-reduce at the end of the step not hidden by backward, seconds.
  double grad_allreduce_seconds = 0.0;

  /// Check every parameter is in range. Errors: InvalidArgument naming the parameter.
  Status Validate() const;
  /// One line per parameter: "name = value  (meaning)".
  std::string Describe() const;
};

/// Time of one (DP rank, micro-step, CP rank): what its GPU computes, before waiting.
struct RankTime {
  double vision_seconds = 0;
  double audio_seconds = 0;  // the audio encoder's (omni corpora), unscaled by the vision factor
  double llm_seconds = 0;
  /// Causal (query, key) pairs its LLM attends: of its queries, under CP those of its chunks
  /// (what a measured run calibrates the attention's rate against: bench/replay_step.py).
  double attention_pairs = 0;
};

/// The simulated step.
struct StepSim {
  uint32_t dp = 1, ga = 1, cp = 1;
  /// Per (DP rank, micro-step, CP rank), index (d·ga + m)·cp + r.
  std::vector<RankTime> ranks;
  /// Step time under the layout's sync model, seconds (overheads included).
  double step_seconds = 0;
  /// Perfect balance: every GPU busy all step (all work / GPUs + the same overheads).
  double lower_bound_seconds = 0;
  /// What no placement of the step's packs or CP assignment of their items can beat (+ the same
  /// overheads): the larger of lower_bound_seconds with each pack's CP group spending at least
  /// its largest vision item (items are indivisible: cp::AtomicVisionFloor) and, under
  /// micro-step sync, balance::MicrostepLowerBound of those packs (packs are indivisible too).
  double atomic_lower_bound_seconds = 0;
  /// Real (non-padding) LLM tokens the step trains.
  uint64_t tokens = 0;
  /// Summed GPU-seconds of vision, audio and LLM work (naive CP's duplicate encodes included).
  double vision_gpu_seconds = 0, audio_gpu_seconds = 0, llm_gpu_seconds = 0;
  /// Vision GPU-seconds with each pack's CP group busy at least its largest item's time.
  double atomic_vision_gpu_seconds = 0;
  /// Per pack holding images, when CP > 1: the most-loaded CP rank's vision cost over the
  /// pack's vision cost / CP (1 = perfect; naive's duplicate encodes of straddling images count
  /// against it).
  std::vector<double> cp_vision_imbalance;

  double tokens_per_second() const { return step_seconds > 0 ? tokens / step_seconds : 0; }
  const RankTime& at(uint32_t d, uint32_t m, uint32_t r) const {
    return ranks[(size_t{d} * ga + m) * cp + r];
  }
};

/// The step time of per-rank times (`ranks` indexed as StepSim::ranks: modelled, or measured by
/// bench/replay_step.py) under `layout`'s sync model, before the fixed overheads: a CP group
/// runs max(vision) then max(LLM) of its ranks (the LLM's first layer waits for every shard);
/// the DP ranks then wait as layout.sync says, by balance::Evaluate's model (kStep: only at the
/// all-reduce; kMicrostep: every micro-step within each sync group of layout.ep ranks;
/// kPipeline: 1F1B fill and drain). Errors: InvalidArgument when `ranks` is not DP x GA x CP
/// long or the layout's sync grid is invalid.
Result<double> SyncedSeconds(const plan::Layout& layout, std::span<const RankTime> ranks);

/// Simulate one step of `plan` on its layout, evaluating the plan's own cp stage (plan.cp:
/// the split and vision assignment the loader executes; rerun plan::AddCpStage with another
/// policy to compare policies). Each pack's vision seconds are spread over its images by
/// vision FLOPs; with CP > 1 a rank encodes what the assignment gives it, and the pack's LLM
/// seconds are split over the CP ranks by tokens and causal attention pairs of their chunks;
/// the ranks wait as SyncedSeconds says. Errors: InvalidArgument for bad params, a plan
/// without its cp stage, or one that fails Validate().
Result<StepSim> SimulateStep(const plan::StepPlan& plan, const SimParams& params);

}  // namespace mmpt::sim
