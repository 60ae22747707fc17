#include "mmpt/sim/ablation.h"

#include <algorithm>

#include <fmt/format.h>

#include "mmpt/plan/cp_stage.h"

namespace mmpt::sim {
namespace {

struct Totals {
  double seconds = 0, lower_bound = 0, atomic_lower_bound = 0;
  uint64_t tokens = 0;
  uint32_t steps = 0;
  std::vector<double> imbalance;
};

Result<Totals> SimulateAll(const std::vector<plan::StepPlan>& plans, const SimParams& params,
                           StepSim* first = nullptr) {
  Totals totals;
  for (const plan::StepPlan& plan : plans) {
    MMPT_ASSIGN_OR_RETURN(StepSim sim, SimulateStep(plan, params));
    totals.seconds += sim.step_seconds;
    totals.lower_bound += sim.lower_bound_seconds;
    totals.atomic_lower_bound += sim.atomic_lower_bound_seconds;
    totals.tokens += sim.tokens;
    ++totals.steps;
    totals.imbalance.insert(totals.imbalance.end(), sim.cp_vision_imbalance.begin(),
                            sim.cp_vision_imbalance.end());
    if (first != nullptr && totals.steps == 1) *first = std::move(sim);
  }
  return totals;
}

AblationRow MakeRow(std::string stage, const Totals& totals, bool cumulative) {
  AblationRow row;
  row.stage = std::move(stage);
  row.step_seconds = totals.steps > 0 ? totals.seconds / totals.steps : 0;
  row.lower_bound_seconds = totals.steps > 0 ? totals.lower_bound / totals.steps : 0;
  row.atomic_lower_bound_seconds = totals.steps > 0 ? totals.atomic_lower_bound / totals.steps : 0;
  row.tokens_per_second = totals.seconds > 0 ? totals.tokens / totals.seconds : 0;
  row.cumulative = cumulative;
  return row;
}

// The next plan of mmpt's planner for `policy`: under CP its cp stage must execute that policy
// (the planner balanced what it makes each pack cost).
Result<plan::StepPlan> NextPlan(const PolicyPlanSource& mmpt, cp::VisionPolicy policy) {
  MMPT_ASSIGN_OR_RETURN(plan::StepPlan plan, mmpt(policy));
  if (plan.layout.cp == 1) return plan;
  for (size_t p = 0; p < plan.cp.size(); ++p) {
    if (!plan.cp[p].split.cu_seqlens.empty() && plan.cp[p].vision.policy != policy) {
      return Status::InvalidArgument("step {} pack {}: the {} planner's plan assigns images by {}",
                                     plan.step, p, cp::VisionPolicyName(policy),
                                     cp::VisionPolicyName(plan.cp[p].vision.policy));
    }
  }
  return plan;
}

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 1;
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(q * (values.size() - 1))];
}

PolicyRow MakePolicyRow(cp::VisionPolicy policy, const Totals& t) {
  PolicyRow row;
  row.policy = policy;
  row.imbalance = t.imbalance;
  row.mean_imbalance = 1;
  if (!t.imbalance.empty()) {
    double sum = 0;
    for (double v : t.imbalance) sum += v;
    row.mean_imbalance = sum / t.imbalance.size();
    row.max_imbalance = *std::max_element(t.imbalance.begin(), t.imbalance.end());
  }
  row.p95_imbalance = Percentile(t.imbalance, 0.95);
  row.tokens_per_second = t.seconds > 0 ? t.tokens / t.seconds : 0;
  return row;
}

// Each row against vanilla (the first) and against what it follows: a cumulative stage the
// stage before it, an alternative the stage before the last cumulative one (the one it stands
// in for).
void CompareRows(std::vector<AblationRow>& rows) {
  const double base_tps = rows.front().tokens_per_second;
  double previous = base_tps, before_last = base_tps;
  for (AblationRow& row : rows) {
    row.relative = base_tps > 0 ? row.tokens_per_second / base_tps : 0;
    const double reference = row.cumulative ? previous : before_last;
    row.vs_previous = reference > 0 ? row.tokens_per_second / reference : 0;
    if (row.cumulative) {
      before_last = previous;
      previous = row.tokens_per_second;
    }
  }
}

}  // namespace

Result<Ablation> RunAblation(const PlanSource& vanilla, const PolicyPlanSource& mmpt,
                             const AblationOptions& options) {
  MMPT_RETURN_IF_ERROR(options.params.Validate());
  const double factor = options.native_encoder_factor;
  if (!(factor >= 0)) {
    return Status::InvalidArgument("native_encoder_factor must be >= 0, got {}", factor);
  }
  if (options.steps == 0) return Status::InvalidArgument("steps must be at least 1");
  // Under CP the planner balances each pack's CP cost under the policy its plans execute: each
  // stage's plans come from mmpt's planner for that stage's policy (before vision DP: naive).
  std::vector<plan::StepPlan> vanilla_plans, naive_plans, dealt_plans, count_plans, cost_plans;
  for (uint32_t s = 0; s < options.steps; ++s) {
    MMPT_ASSIGN_OR_RETURN(plan::StepPlan v, vanilla());
    MMPT_ASSIGN_OR_RETURN(plan::StepPlan m, NextPlan(mmpt, cp::VisionPolicy::kNaive));
    if (v.layout.dp != m.layout.dp || v.layout.cp != m.layout.cp || v.layout.ga != m.layout.ga) {
      return Status::InvalidArgument("vanilla and mmpt plans have different layouts");
    }
    dealt_plans.push_back(plan::DealInPackingOrder(m));
    vanilla_plans.push_back(std::move(v));
    const bool over_cp = m.layout.cp > 1;
    naive_plans.push_back(std::move(m));
    if (!over_cp) continue;
    MMPT_ASSIGN_OR_RETURN(plan::StepPlan by_count, NextPlan(mmpt, cp::VisionPolicy::kCount));
    MMPT_ASSIGN_OR_RETURN(plan::StepPlan by_cost, NextPlan(mmpt, cp::VisionPolicy::kCost));
    count_plans.push_back(std::move(by_count));
    cost_plans.push_back(std::move(by_cost));
  }
  // Every stage before vision DP encodes without it: each CP rank what its shard needs (the
  // naive planner's plans, dealt ones with them, do; vanilla's assign by count as Megatron
  // Bridge does, so its cp stage is rerun).
  for (plan::StepPlan& v : vanilla_plans) {
    MMPT_RETURN_IF_ERROR(plan::AddCpStage(v, cp::VisionPolicy::kNaive));
  }

  Ablation ablation;
  ablation.cp = naive_plans.front().layout.cp;
  for (const plan::StepPlan& v : vanilla_plans) ablation.vanilla_samples += v.sequences.size();
  SimParams native = options.params;
  native.vision_speed_factor = 1.0;
  SimParams base = native;  // the Hugging Face-style encoder, when the factor is measured
  if (factor > 0) base.vision_speed_factor = 1.0 / factor;

  MMPT_ASSIGN_OR_RETURN(Totals t_vanilla, SimulateAll(vanilla_plans, base));
  MMPT_ASSIGN_OR_RETURN(Totals t_global, SimulateAll(dealt_plans, base, &ablation.unbalanced));
  MMPT_ASSIGN_OR_RETURN(Totals t_reorder, SimulateAll(naive_plans, base, &ablation.balanced));
  ablation.rows.push_back(MakeRow("vanilla", t_vanilla, true));
  ablation.rows.push_back(MakeRow("+ global packing", t_global, true));
  ablation.rows.push_back(MakeRow("+ reordering", t_reorder, true));
  MMPT_ASSIGN_OR_RETURN(Totals t_native, SimulateAll(naive_plans, native));
  if (factor > 0) {
    ablation.rows.push_back(
        MakeRow(fmt::format("+ native encoder (x{:g})", factor), t_native, true));
  }

  if (ablation.cp > 1) {
    MMPT_ASSIGN_OR_RETURN(Totals t_count, SimulateAll(count_plans, native));
    MMPT_ASSIGN_OR_RETURN(Totals t_cost, SimulateAll(cost_plans, native));
    ablation.policies.push_back(MakePolicyRow(cp::VisionPolicy::kNaive, t_native));
    ablation.policies.push_back(MakePolicyRow(cp::VisionPolicy::kCount, t_count));
    ablation.policies.push_back(MakePolicyRow(cp::VisionPolicy::kCost, t_cost));
    ablation.rows.push_back(MakeRow("+ vision DP when CP (by cost, mmpt)", t_cost, true));
    ablation.rows.push_back(MakeRow("  alt: vision DP by count (Megatron Bridge)", t_count, false));
  }

  CompareRows(ablation.rows);
  ablation.parameters =
      fmt::format("  {:<28} = {:<10} {}\n  {:<28} = {:<10} {}\n", "native_encoder_factor",
                  factor > 0 ? fmt::format("{:g}", factor) : "-",
                  factor > 0 ? "Hugging Face-style encoder time over the native encoder's, "
                               "measured on this hardware (its preset names the device)"
                             : "not measured on this hardware: no '+ native encoder' stage "
                               "(bench/encoder_bench.py measures it for a hardware preset)",
                  "steps", options.steps, "steps simulated per stage") +
      native.Describe() +
      "  (vision time is the native encoder's; stages before '+ native encoder' divide "
      "vision_speed_factor by native_encoder_factor; before '+ vision DP' every CP rank encodes "
      "what its shard needs, then the plans' cp stage assigns images by cost, and by count in "
      "its alt row)\n";
  return ablation;
}

}  // namespace mmpt::sim
