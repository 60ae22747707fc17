#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cp/vision_assign.h"
#include "mmpt/plan/step_plan.h"
#include "mmpt/sim/step_model.h"

namespace mmpt::sim {

/// Produces the plans of consecutive steps (a planner's PlanStep()).
using PlanSource = std::function<Result<plan::StepPlan>()>;
/// Produces the plans of consecutive steps of mmpt's planner executing a CP vision policy (one
/// planner per policy, all on the same sample stream): under CP the planner balances each
/// pack's cost under the policy it executes (plan::CpPackCosts).
using PolicyPlanSource = std::function<Result<plan::StepPlan>(cp::VisionPolicy)>;

/// What the ablation varies, beyond the plans themselves.
struct AblationOptions {
  /// Parameters of every stage; the stages override vision_speed_factor and rerun each plan's cp
  /// stage under the policy they stand for.
  SimParams params;
  /// The Hugging Face-style encoder's time over the native encoder's, measured on the hardware
  /// the plans were costed for (its preset's native_encoder_factor; RunCorpusAblation takes it
  /// from there). The costed vision time is the native encoder's: stages before "+ native
  /// encoder" multiply it by this factor. 0: not measured, and there is no such stage.
  double native_encoder_factor = 0;
  /// Steps simulated per stage; times and tokens are summed over them.
  uint32_t steps = 4;
};

/// One stage of the ablation, over all simulated steps.
struct AblationRow {
  std::string stage;
  double step_seconds = 0;         // mean simulated step time
  double tokens_per_second = 0;    // Σ real tokens / Σ step time
  double relative = 1;             // tokens_per_second / vanilla's
  double vs_previous = 1;          // tokens_per_second / the previous cumulative stage's (for an
                                   // alternative: the stage before the one it stands in for)
  bool cumulative = true;          // false: an alternative shown beside the stages
  double lower_bound_seconds = 0;  // mean perfect-balance step time
  /// Mean perfect-balance step time of the stage's packs with indivisible vision items
  /// (StepSim::atomic_lower_bound_seconds): what no placement or assignment of them can beat.
  double atomic_lower_bound_seconds = 0;
};

/// One CP vision policy on the final stage's plans (CP > 1 only).
struct PolicyRow {
  cp::VisionPolicy policy = cp::VisionPolicy::kNaive;
  double mean_imbalance = 1;  // mean over packs with images of StepSim::cp_vision_imbalance
  double p95_imbalance = 1;
  double max_imbalance = 1;
  double tokens_per_second = 0;
  std::vector<double> imbalance;  // per pack with images, all steps
};

/// The ablation of the seed's optimizations on one configuration.
struct Ablation {
  uint32_t cp = 1;
  std::vector<AblationRow> rows;
  std::vector<PolicyRow> policies;
  StepSim unbalanced;      // first step, packed globally, dealt in packing order (not reordered)
  StepSim balanced;        // first step, reordered (native encoder, CP policy naive)
  std::string parameters;  // every parameter, one per line
  uint64_t vanilla_samples = 0;  // samples the vanilla plans placed, all steps
  /// Times each vanilla rank trained through its packing buffer (plan::VanillaBufferTurnover;
  /// RunCorpusAblation sets it, with the buffer's size): below ~3 vanilla's figures favour it.
  double vanilla_buffer_turnover = 0;
  uint32_t vanilla_buffer = 0;
};

/// Run the stages: vanilla (the `vanilla` plans), + global packing (mmpt's naive-policy plans
/// dealt in packing order, plan::DealInPackingOrder), + reordering (those plans as balanced),
/// + native encoder (when measured: the stages before it run the Hugging Face-style encoder,
/// native_encoder_factor times slower), and, when CP > 1, + vision DP when CP (the cost-policy
/// plans) with the count-policy plans (Megatron Bridge) as an alternative row. Stages before
/// vision DP use the naive CP policy; each plan's cp stage is rerun under its stage's policy.
/// Errors: those of the plan sources and SimulateStep; InvalidArgument when the two sources'
/// plans differ in layout.
Result<Ablation> RunAblation(const PlanSource& vanilla, const PolicyPlanSource& mmpt,
                             const AblationOptions& options);

}  // namespace mmpt::sim
