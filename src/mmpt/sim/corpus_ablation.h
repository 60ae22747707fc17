#pragma once

#include "mmpt/core/status.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/plan/planner.h"
#include "mmpt/sim/ablation.h"

namespace mmpt::sim {

/// Run the ablation on a corpus: vanilla plans from plan::VanillaPlanner, mmpt plans from
/// plan::Planner, both on `table`, `model` and `config` (the same seed, hence the same sample
/// stream). options.params.attention_pair_weight is set from the model's LLM preset.
/// Errors: those of CostSamples, the planners and RunAblation.
Result<Ablation> RunCorpusAblation(const cost::SampleTable& table, const cost::CostModel& model,
                                   const plan::PlannerConfig& config, AblationOptions options);

}  // namespace mmpt::sim
