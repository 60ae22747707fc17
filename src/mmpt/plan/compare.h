#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/plan/planner.h"

namespace mmpt::plan {

/// One planner's figures over the planned steps.
struct PlannerFigures {
  double efficiency = 0;            // Σ tokens / (Σ packs × seq_len)
  uint64_t packs = 0;               // Σ packs
  uint64_t lower_bound_packs = 0;   // Σ ⌈tokens / seq_len⌉ per step
  uint64_t tokens = 0;              // Σ tokens placed in packs
  uint64_t placed = 0;              // Σ samples placed
  uint64_t images = 0;              // Σ images of the placed samples
  uint64_t video_items = 0;         // Σ video items (a grouped video's temporal groups)
  uint64_t dropped = 0;             // Σ over-long samples dropped
  uint64_t truncated = 0;           // Σ over-long samples truncated
  double step_seconds = 0;          // mean estimated step time
  double lower_bound_seconds = 0;   // mean perfect-balance step time of its own packs
  double max_vision_imbalance = 1;  // max over steps and (sync group, micro-step): max/mean
  double max_llm_imbalance = 1;
  double mean_vision_imbalance = 1;  // mean over steps of the per-step mean
  double mean_llm_imbalance = 1;
  double audio_seconds = 0;        // Σ audio encoder seconds of its packs (0: no audio)
  double max_audio_imbalance = 1;  // as vision's, for the audio encoder
  double mean_audio_imbalance = 1;
  double tokens_per_second = 0;      // Σ tokens / Σ step seconds, per DP replica
  double plan_seconds_per_step = 0;  // mean wall time to plan one step (this process)
  uint64_t last_plan_hash = 0;       // StepPlan::Hash() of the last step
};

/// mmpt's packing against the best possible. Every sample the run drew and did not drop must be
/// packed, by these steps or later ones (the carried): pack::BoundPacking over all of them says
/// how full any packing of them can be. mmpt's figure over the planned steps can exceed it for a
/// while, by carrying the samples that pack worst; `settled` counts them packed as well as the
/// bound allows, so it never exceeds `bound`.
struct PackingLimit {
  double bound = 0;      // Σ tokens / (⌈LP packs⌉ × seq_len) over placed and carried samples
  double settled = 0;    // Σ those tokens / ((packs + ⌈LP packs of the carried⌉) × seq_len)
  uint64_t carried = 0;  // samples carried past the last step
  uint32_t grain_tokens = 1;
  double seconds = 0;  // time to compute both bounds
};

/// One source of the corpus and its share of the blend.
struct SourceShare {
  std::string name;
  uint64_t samples = 0;
  double weight = 0;  // the fraction of draws from it (Planner::SourceShare), summing to 1
};

/// Vanilla beside mmpt on the same corpus, cost model and config.
struct Comparison {
  uint32_t steps = 0;
  Layout layout;
  std::string vision, llm, hardware;
  uint64_t samples = 0;  // corpus size
  std::vector<SourceShare> sources;
  /// How many times each vanilla rank's packing buffer was refilled over the run. Vanilla
  /// trains on a buffer's packs in first-fit order, fullest first, so below ~3 turnovers its
  /// figures are biased in its favour (it has not yet reached its emptiest packs).
  double vanilla_buffer_turnover = 0;
  uint32_t vanilla_buffer = 0;  // samples per rank in vanilla's packing buffer
  PlannerFigures vanilla;
  PlannerFigures mmpt;
  PackingLimit mmpt_limit;
  /// vanilla step time / mmpt step time, and the same for tokens per second.
  double step_speedup() const { return vanilla.step_seconds / mmpt.step_seconds; }
  double throughput_speedup() const { return mmpt.tokens_per_second / vanilla.tokens_per_second; }
};

/// Plan `steps` steps with the vanilla baseline and with mmpt and report both. The library entry
/// point behind `mmpt plan` and the demo. Errors: those of CostSamples, Planner, VanillaPlanner.
Result<Comparison> ComparePlanners(const cost::SampleTable& table, const cost::CostModel& model,
                                   const PlannerConfig& config, uint32_t steps);

}  // namespace mmpt::plan
