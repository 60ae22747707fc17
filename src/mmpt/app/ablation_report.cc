#include "mmpt/app/reports.h"

#include <algorithm>

#include <fmt/format.h>

namespace mmpt::app {

std::string FormatAblation(const sim::Ablation& ablation) {
  std::string out =
      fmt::format("{:<46} {:>10} {:>12} {:>10} {:>9} {:>11} {:>11} {:>8}\n", "stage", "step (s)",
                  "tokens/s", "vs vanilla", "vs prev", "bound (s)", "atomic (s)", "÷ atomic");
  for (const sim::AblationRow& row : ablation.rows) {
    const double atomic = row.atomic_lower_bound_seconds;
    out += fmt::format(
        "{:<46} {:>10.3f} {:>12.0f} {:>9.1f}% {:>+8.1f}% {:>11.3f} {:>11.3f} {:>8.3f}\n", row.stage,
        row.step_seconds, row.tokens_per_second, 100 * row.relative, 100 * (row.vs_previous - 1),
        row.lower_bound_seconds, atomic, atomic > 0 ? row.step_seconds / atomic : 0.0);
  }
  out +=
      "(bound: every GPU busy all step; atomic: what no placement or CP assignment of the same "
      "packs beats, each image or video encoded whole by one rank and each pack trained whole at "
      "a micro-step's barrier)\n";
  out += VanillaTransientNote(ablation.vanilla_buffer, ablation.vanilla_buffer_turnover);
  if (!ablation.policies.empty()) {
    out +=
        fmt::format("\nCP {} vision load per pack (most-loaded rank / (pack vision cost / CP)):\n",
                    ablation.cp);
    out +=
        fmt::format("{:<8} {:>8} {:>8} {:>8} {:>12}\n", "policy", "mean", "p95", "max", "tokens/s");
    for (const sim::PolicyRow& p : ablation.policies) {
      out += fmt::format("{:<8} {:>8.3f} {:>8.3f} {:>8.3f} {:>12.0f}\n",
                         cp::VisionPolicyName(p.policy), p.mean_imbalance, p.p95_imbalance,
                         p.max_imbalance, p.tokens_per_second);
    }
  }
  out += "\nparameters:\n" + ablation.parameters;
  return out;
}

nlohmann::json AblationToJson(const sim::Ablation& ablation) {
  nlohmann::json rows = nlohmann::json::array(), policies = nlohmann::json::array();
  for (const sim::AblationRow& row : ablation.rows) {
    rows.push_back({{"stage", row.stage},
                    {"step_seconds", row.step_seconds},
                    {"tokens_per_second", row.tokens_per_second},
                    {"relative", row.relative},
                    {"vs_previous", row.vs_previous},
                    {"cumulative", row.cumulative},
                    {"lower_bound_seconds", row.lower_bound_seconds},
                    {"atomic_lower_bound_seconds", row.atomic_lower_bound_seconds}});
  }
  for (const sim::PolicyRow& p : ablation.policies) {
    policies.push_back({{"policy", cp::VisionPolicyName(p.policy)},
                        {"mean_imbalance", p.mean_imbalance},
                        {"p95_imbalance", p.p95_imbalance},
                        {"max_imbalance", p.max_imbalance},
                        {"tokens_per_second", p.tokens_per_second}});
  }
  return {{"cp", ablation.cp},
          {"vanilla_buffer_turnover", ablation.vanilla_buffer_turnover},
          {"rows", rows},
          {"policies", policies},
          {"parameters", ablation.parameters}};
}

}  // namespace mmpt::app
