#pragma once

#include <string>
#include <vector>

#include "mmpt/app/report_html.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/plan/step_plan.h"
#include "mmpt/sim/ablation.h"

namespace mmpt::app {

/// The ablation of one named cluster configuration.
struct ConfigAblation {
  std::string name;  // e.g. "seed: EP 8, 8K, GA 128"
  plan::Layout layout;
  sim::Ablation ablation;
};

/// The corpus section: sources, samples, images, tokens, and histograms of sample tokens,
/// image sizes and image tokens (from `costs`, computed under the report's vision preset).
ReportSection CorpusSection(const cost::SampleTable& table, const cost::CostedSamples& costs,
                            const std::string& vision_name);

/// The ablation of each configuration: table and relative-throughput chart.
ReportSection AblationSection(const std::vector<ConfigAblation>& configs);

/// Per-rank load per micro-step of `config`'s first step, packed globally but dealt in random
/// order (before balancing) and as the planner balanced it (after): heat maps of each rank's
/// vision + LLM seconds per micro-step and each rank's step total against the lower bound.
ReportSection LoadSection(const ConfigAblation& config);

/// CP vision load per policy of `config` (CP > 1): per pack, the most-loaded CP rank's vision
/// cost over the pack's vision cost / CP, summarized per policy and as histograms.
ReportSection CpSection(const ConfigAblation& config);

/// Every parameter of every configuration, as printed by `mmpt simulate`.
ReportSection ParametersSection(const std::vector<ConfigAblation>& configs);

}  // namespace mmpt::app
