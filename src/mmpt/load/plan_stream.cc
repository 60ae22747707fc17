#include "mmpt/load/plan_stream.h"

#include "mmpt/store/dataset_preset.h"
#include "mmpt/store/planning_table.h"

namespace mmpt::load {

// Kept behind a pointer: the Planner borrows the table, costs and model, so they must not move.
struct PlanStream::Parts {
  cost::SampleTable table;
  cost::CostModel model;
  std::optional<plan::Planner> planner;         // mmpt's, or
  std::optional<plan::VanillaPlanner> vanilla;  // the baseline's
  uint64_t vanilla_next_step = 0;
  plan::Layout layout;
  bool reorder = true;

  // mmpt's next plan, dealt as the config says, in `recycled`'s memory (Planner::PlanStep).
  Result<plan::StepPlan> PlanNext(plan::StepPlan recycled = {}) {
    MMPT_ASSIGN_OR_RETURN(plan::StepPlan made, planner->PlanStep(std::move(recycled)));
    if (!reorder) return plan::DealInPackingOrder(made);
    return made;
  }
};

namespace {
// A plan as the stream hands it out. Made non-const, so that the stream may take its memory
// back once it is the plan's only holder (AdvanceTo).
std::shared_ptr<const plan::StepPlan> Store(plan::StepPlan plan) {
  return std::make_shared<plan::StepPlan>(std::move(plan));
}
// Planner states (a few KB each) for the recent steps a loader's position can be at: memory
// stays flat over a long run.
constexpr size_t kKeptStates = 64;
}  // namespace

Result<std::shared_ptr<PlanStream>> PlanStream::Open(const std::string& dataset_dir,
                                                     PlanStreamConfig config) {
  // The manifest's settings and sources, not its shards: constant time for any dataset.
  MMPT_ASSIGN_OR_RETURN(store::Manifest manifest,
                        store::ReadManifest(dataset_dir, store::ShardList::kSkip));
  MMPT_ASSIGN_OR_RETURN(config.vision,
                        store::DatasetVisionPreset(dataset_dir, manifest, config.vision));
  MMPT_ASSIGN_OR_RETURN(config.audio,
                        store::DatasetAudioPreset(dataset_dir, manifest, config.audio));
  MMPT_ASSIGN_OR_RETURN(cost::SampleTable table, store::OpenPlanningTable(dataset_dir, manifest));
  return Create(std::move(table), config);
}

Result<std::shared_ptr<PlanStream>> PlanStream::Create(cost::SampleTable table,
                                                       const PlanStreamConfig& config) {
  auto or_default = [](const std::string& name, std::string_view fallback) {
    return name.empty() ? std::string(fallback) : name;
  };
  MMPT_ASSIGN_OR_RETURN(cost::CostModel model,
                        cost::CostModel::FromPresets(
                            or_default(config.vision, cost::Defaults::kVision), config.llm,
                            config.hardware, or_default(config.audio, cost::Defaults::kAudio)));
  auto parts = std::unique_ptr<Parts>(new Parts{
      std::move(table), std::move(model), {}, {}, 0, config.planner.layout, config.reorder});
  if (config.vanilla) {
    MMPT_ASSIGN_OR_RETURN(plan::VanillaPlanner vanilla,
                          plan::VanillaPlanner::Create(parts->table, parts->model, config.planner));
    parts->vanilla.emplace(std::move(vanilla));
  } else {
    MMPT_ASSIGN_OR_RETURN(plan::Planner planner,
                          plan::Planner::Create(parts->table, parts->model, config.planner));
    parts->planner.emplace(std::move(planner));
  }
  return std::shared_ptr<PlanStream>(new PlanStream(std::move(parts)));
}

PlanStream::PlanStream(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {
  first_step_ = NextStep();
}

PlanStream::~PlanStream() = default;

const cost::SampleTable& PlanStream::table() const { return parts_->table; }

uint64_t PlanStream::NextStep() const {
  return parts_->vanilla ? parts_->vanilla_next_step : parts_->planner->next_step();
}

Status PlanStream::AdvanceTo(uint64_t step) {
  if (parts_->vanilla) {
    while (parts_->vanilla_next_step <= step) {
      MMPT_ASSIGN_OR_RETURN(plan::StepPlan made, parts_->vanilla->PlanStep());
      plans_[parts_->vanilla_next_step++] = Store(std::move(made));
      while (plans_.size() > kCachedPlans) plans_.erase(plans_.begin());
    }
    return Status::OK();
  }
  plan::Planner& planner = *parts_->planner;
  while (planner.next_step() <= step) {
    const uint64_t s = planner.next_step();
    states_[s] = planner.SaveState();
    // The oldest plan leaves the cache first; when nothing else holds it, the new plan takes
    // over its memory.
    plan::StepPlan recycled;
    while (plans_.size() >= kCachedPlans) {
      std::shared_ptr<const plan::StepPlan> oldest = std::move(plans_.begin()->second);
      plans_.erase(plans_.begin());
      // Sole owner (other holders copy from the cache under mu_): made non-const (Store).
      if (oldest.use_count() == 1) recycled = std::move(const_cast<plan::StepPlan&>(*oldest));
    }
    MMPT_ASSIGN_OR_RETURN(plan::StepPlan made, parts_->PlanNext(std::move(recycled)));
    plans_[s] = Store(std::move(made));
    while (states_.size() > kKeptStates) states_.erase(states_.begin());
  }
  return Status::OK();
}

Result<std::shared_ptr<const plan::StepPlan>> PlanStream::Plan(uint64_t step) {
  std::lock_guard lock(mu_);
  return PlanLocked(step);
}

Result<std::shared_ptr<const plan::StepPlan>> PlanStream::PlanLocked(uint64_t step) {
  auto it = plans_.find(step);
  if (it != plans_.end()) return it->second;
  if (step < first_step_) {
    return Status::OutOfRange("plan of step {}: this planner starts at step {}", step, first_step_);
  }
  if (step < NextStep() && parts_->vanilla) {
    return Status::OutOfRange(
        "plan of step {}: the vanilla planner is at step {} and cannot "
        "replay older steps",
        step, NextStep());
  }
  if (step < NextStep()) {
    // Behind the cache: replay from the state saved before `step`, then come back.
    auto saved = states_.find(step);
    if (saved == states_.end()) {
      return Status::OutOfRange("plan of step {}: too far behind the planner (at step {})", step,
                                parts_->planner->next_step());
    }
    const std::string resume = parts_->planner->SaveState();
    MMPT_RETURN_IF_ERROR(parts_->planner->RestoreState(saved->second).status());
    Result<plan::StepPlan> made = parts_->PlanNext();
    MMPT_RETURN_IF_ERROR(parts_->planner->RestoreState(resume).status());
    if (!made.ok()) return made.status();
    return Store(std::move(*made));
  }
  MMPT_RETURN_IF_ERROR(AdvanceTo(step));
  return plans_.at(step);
}

Result<std::string> PlanStream::StateAt(uint64_t step, uint32_t micro_step) {
  std::lock_guard lock(mu_);
  if (parts_->vanilla || !parts_->reorder) {
    return Status::InvalidArgument(
        "planner state of step {}: the {} planner's state is not saved (it is a stage to "
        "measure against)",
        step, parts_->vanilla ? "vanilla" : "packed");
  }
  if (step < first_step_) {
    return Status::OutOfRange("planner state of step {}: this planner starts at step {}", step,
                              first_step_);
  }
  if (micro_step >= parts_->layout.ga) {
    return Status::InvalidArgument("planner state of step {}: micro-step {} of a step of {}", step,
                                   micro_step, parts_->layout.ga);
  }
  // Inside a step the state needs the planner before and after it, and its plan.
  const uint64_t last = micro_step == 0 ? step : step + 1;
  if (last > 0) MMPT_RETURN_IF_ERROR(AdvanceTo(last - 1));
  auto state_before = [&](uint64_t s) -> Result<std::string> {
    if (s == parts_->planner->next_step()) return parts_->planner->SaveState();
    auto saved = states_.find(s);
    if (saved == states_.end()) {
      return Status::OutOfRange("planner state of step {}: only the last {} steps are kept", s,
                                kKeptStates);
    }
    return saved->second;
  };
  MMPT_ASSIGN_OR_RETURN(std::string before, state_before(step));
  if (micro_step == 0) return before;
  MMPT_ASSIGN_OR_RETURN(std::string after, state_before(step + 1));
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<const plan::StepPlan> current, PlanLocked(step));
  return parts_->planner->StateWithinStep(before, after, *current, micro_step);
}

plan::StepStats PlanStream::LastStats() {
  std::lock_guard lock(mu_);
  return parts_->planner ? parts_->planner->last_stats() : parts_->vanilla->last_stats();
}

Result<plan::Planner::ResumePoint> PlanStream::Restore(std::string_view state) {
  std::lock_guard lock(mu_);
  if (parts_->vanilla || !parts_->reorder) {
    return Status::InvalidArgument(
        "the {} planner cannot restore a saved state (it is a stage to measure against)",
        parts_->vanilla ? "vanilla" : "packed");
  }
  MMPT_ASSIGN_OR_RETURN(plan::Planner::ResumePoint resume, parts_->planner->RestoreState(state));
  plans_.clear();
  states_.clear();
  first_step_ = parts_->planner->next_step();
  return resume;
}

PlanFunction PlanStream::AsFunction() {
  return [self = shared_from_this()](uint64_t step) { return self->Plan(step); };
}

const plan::Layout& PlanStream::layout() const { return parts_->layout; }

const cost::CostModel& PlanStream::model() const { return parts_->model; }

std::string_view PlanStream::planner_name() const {
  if (parts_->vanilla) return "vanilla";
  return parts_->reorder ? "mmpt" : "packed";
}

}  // namespace mmpt::load
