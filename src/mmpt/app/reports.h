#pragma once

// What the CLI and the demo print of a stage's results, as text for a terminal and as JSON for
// scripts. The stages compute (store::Inspect, plan::ComparePlanners, sim::RunAblation); how
// their results read is decided here, once.

#include <string>

#include <nlohmann/json.hpp>

#include "mmpt/plan/compare.h"
#include "mmpt/sim/ablation.h"
#include "mmpt/store/inspect.h"

namespace mmpt::app {

/// `mmpt inspect`: a table per source and histograms of tokens per sample.
std::string RenderInspectText(const store::InspectReport& report);
/// `mmpt inspect --json`.
std::string RenderInspectJson(const store::InspectReport& report);

/// `mmpt plan`: the vanilla baseline and mmpt side by side.
std::string FormatComparison(const plan::Comparison& comparison);
/// `mmpt plan --json`: the comparison as one JSON object.
std::string ComparisonJson(const plan::Comparison& comparison);

/// The note `mmpt plan` and `mmpt simulate` print when vanilla's ranks trained through fewer than
/// 3 of their `buffer`-sample packing buffers (`turnover`), else "".
std::string VanillaTransientNote(uint32_t buffer, double turnover);

/// `mmpt simulate`: the ablation as an aligned text table followed by its parameters.
std::string FormatAblation(const sim::Ablation& ablation);
/// `mmpt simulate --json`: {"cp", "rows": [...], "policies": [...], "parameters": "..."}.
nlohmann::json AblationToJson(const sim::Ablation& ablation);

}  // namespace mmpt::app
