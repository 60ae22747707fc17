#pragma once

// Plans by step number for the loader, from the sequential planner: plans are made in order,
// once, remembered for a few steps, and the planner's state before every planned step is kept
// so a loader can save its place and resume at it. A stream of the vanilla baseline's plans
// serves them the same way, without saving or resuming: to measure what mmpt's plans buy.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "mmpt/core/status.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/presets.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/load/loader.h"
#include "mmpt/plan/planner.h"
#include "mmpt/plan/vanilla.h"

namespace mmpt::load {

/// What a PlanStream is made from: presets by name (cost::Defaults unless set) and the
/// planner's config.
struct PlanStreamConfig {
  plan::PlannerConfig planner;
  /// Serve the baseline's plans (plan::VanillaPlanner, Megatron Bridge + Energon packing) instead
  /// of mmpt's, so a training run can measure what mmpt's plans buy. They cannot be saved or
  /// restored (StateAt and Restore return InvalidArgument) nor served more than a few steps
  /// behind the newest.
  bool vanilla = false;
  /// false: serve mmpt's packs dealt in packing order, not reordered (plan::DealInPackingOrder:
  /// the ablation's "+ global packing" stage), so a run can measure what reordering buys.
  bool reorder = true;
  /// Vision and audio presets: empty means the dataset's (Open reads its manifest; Create
  /// takes cost::Defaults). Given to Open, each must be the dataset's: image and audio tokens
  /// derive from them.
  std::string vision;
  std::string audio;
  std::string llm{cost::Defaults::kLlm};
  std::string hardware{cost::Defaults::kHardware};
};

/// Owns a corpus table (a mapped planning table, store::OpenPlanningTable), a cost model and a
/// Planner that costs what it draws, and serves plans by step.
/// Thread safety: Plan(), StateAt() and Restore() may be called from any thread (one mutex).
class PlanStream : public std::enable_shared_from_this<PlanStream> {
 public:
  /// Plans kept for workers that are a few micro-steps apart. Once the cache is full, each new
  /// plan takes over the memory of the one leaving it when nothing else holds that one.
  static constexpr size_t kCachedPlans = 4;

  /// Plan a prepared dataset: its planning table, with its manifest's vision and audio presets
  /// (store::DatasetVisionPreset, DatasetAudioPreset), and its mapped planning table
  /// (store::OpenPlanningTable). The one way every command, binding and
  /// benchmark plans a dataset directory, so they plan what the loader renders. Errors: those
  /// of the presets' resolution, store::OpenPlanningTable and Create.
  static Result<std::shared_ptr<PlanStream>> Open(const std::string& dataset_dir,
                                                  PlanStreamConfig config);
  /// Plan over `table` (a table without a dataset: presets left empty are cost::Defaults').
  /// Errors: those of CostModel::FromPresets and Planner::Create (or VanillaPlanner::Create).
  static Result<std::shared_ptr<PlanStream>> Create(cost::SampleTable table,
                                                    const PlanStreamConfig& config);
  ~PlanStream();

  /// The plan of `step`. Steps ahead are planned in order; a step behind the cached ones is
  /// re-planned from the planner state saved before it (kept for the last 64 steps; a vanilla
  /// stream keeps only its last 4 plans). Errors: the planner's; OutOfRange for a step before
  /// the first this stream can reach (before a restored state) or too far behind.
  Result<std::shared_ptr<const plan::StepPlan>> Plan(uint64_t step);
  /// The planner's serialized state where a loader stands before micro-step `micro_step` of
  /// `step` (0: just before planning `step`; else Planner::StateWithinStep, which a restore
  /// under another layout needs). Plans up to `step` + 1 if needed. Errors: as Plan, and
  /// InvalidArgument for a micro-step past the step's, or on a vanilla stream.
  Result<std::string> StateAt(uint64_t step, uint32_t micro_step = 0);
  /// Resume from StateAt() bytes: the next plan made is the returned point's step, and a loader
  /// starts at its micro-step (Planner::RestoreState: exact under the same layout, elastic
  /// under another). Forgets cached plans. Errors: those of Planner::RestoreState (Corrupt,
  /// InvalidArgument; InvalidArgument on a vanilla stream).
  Result<plan::Planner::ResumePoint> Restore(std::string_view state);
  /// A PlanFunction for Loader::Start that keeps this stream alive.
  PlanFunction AsFunction();

  const cost::SampleTable& table() const;
  const plan::Layout& layout() const;
  /// The cost model the plans were made with (their packs' vision and LLM seconds).
  const cost::CostModel& model() const;
  /// Which plans it serves: "vanilla", "packed" (mmpt's, not reordered) or "mmpt".
  std::string_view planner_name() const;
  /// The statistics of the step its planner planned last (Planner::last_stats; default before
  /// any).
  plan::StepStats LastStats();

 private:
  struct Parts;
  explicit PlanStream(std::unique_ptr<Parts> parts);
  // The step the planner plans next.
  uint64_t NextStep() const;
  // Plan steps until NextStep() > step (mu_ held).
  Status AdvanceTo(uint64_t step);
  // Plan(step) with mu_ held.
  Result<std::shared_ptr<const plan::StepPlan>> PlanLocked(uint64_t step);

  std::unique_ptr<Parts> parts_;
  std::mutex mu_;
  uint64_t first_step_ = 0;  // the earliest step a saved state can reproduce
  std::map<uint64_t, std::shared_ptr<const plan::StepPlan>> plans_;  // recent plans
  std::map<uint64_t, std::string> states_;  // planner state before each planned step
};

}  // namespace mmpt::load
