#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/plan/planner.h"
#include "mmpt/plan/sample_order.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::plan {

/// The baseline mmpt is measured against, the way Megatron Bridge + Megatron Energon pack
/// today: the same blended sample stream is dealt round-robin to the DP ranks; each rank fills
/// a local buffer of `config.vanilla_buffer` samples, packs it with first-fit decreasing, and
/// trains on those packs in the order they come out, ga × mbs per step, with no view of any
/// other rank. Over-long samples follow the same policy as mmpt. Like Energon's buffers, it
/// takes the stream as drawn, so at an epoch boundary a step may hold a sample twice (what
/// Planner prevents); allow_repeat does not apply to it. It is a baseline for comparison,
/// simulation and measurement (load::PlanStreamConfig::vanilla serves its plans to a loader);
/// its state is not saved.
/// Borrowed table and model must outlive it. Not thread-safe.
class VanillaPlanner {
 public:
  /// Errors: as Planner::Create, but for a corpus smaller than a step (it repeats samples).
  static Result<VanillaPlanner> Create(const cost::SampleTable& table, const cost::CostModel& model,
                                       PlannerConfig config);

  /// Plan the next step. Errors: those of PackItems and the cp stage.
  Result<StepPlan> PlanStep();
  /// Statistics of the last PlanStep() (carried counts samples waiting in rank buffers).
  const StepStats& last_stats() const { return stats_; }

 private:
  VanillaPlanner(const cost::SampleTable& table, const cost::CostModel& model, PlannerConfig config,
                 SampleOrder order);
  Status FlushBuffer(uint32_t rank);

  const cost::SampleTable* table_;
  const cost::CostModel* model_;
  PlannerConfig config_;
  SampleOrder order_;
  uint64_t step_ = 0;
  uint64_t dealt_ = 0;  // samples dealt so far (sample k goes to rank k mod dp)
  std::vector<std::vector<PlacedSample>> buffers_;            // per rank
  std::vector<std::deque<std::vector<PlacedSample>>> ready_;  // per rank: packs
  StepStats stats_;
};

/// How many times each of `config`'s vanilla ranks has trained through a packing buffer once the
/// vanilla plans placed `placed_samples` samples. Vanilla trains a buffer's packs in first-fit
/// order, fullest and largest samples first, so below ~3 turnovers its figures favour it.
double VanillaBufferTurnover(uint64_t placed_samples, const PlannerConfig& config);

}  // namespace mmpt::plan
