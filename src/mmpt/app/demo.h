#pragma once

#include <string>
#include <vector>

#include "mmpt/app/report_html.h"
#include "mmpt/core/status.h"
#include "mmpt/cost/presets.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/plan/planner.h"

namespace mmpt::app {

/// One cluster configuration the demo simulates.
struct DemoConfiguration {
  std::string name;
  plan::PlannerConfig planner;
};

/// The seed's two settings (../shared/seed/README.md): the 30B MoE VLM with EP 8, TP = PP =
/// CP = 1, 8K sequences and GA 128 (8 DP ranks: one EP group); and CP 2 with 24K sequences
/// (GA 32), where vision DP when CP applies. `weights` are the corpus's source weights.
std::vector<DemoConfiguration> SeedConfigurations(const std::vector<double>& weights);

/// What the demo runs on and writes.
struct DemoOptions {
  std::string report_path = "report.html";
  uint32_t steps = 2;  // steps simulated per stage and configuration
  std::string vision{cost::Defaults::kVision};
  std::string llm{cost::Defaults::kLlm};
  std::string hardware{cost::Defaults::kHardware};
  /// Sections other stages contribute (the tokenizer's figures), placed before the parameters.
  std::vector<ReportSection> extra_sections;
  /// Use the built-in profile even when ../shared/data/real is present (tests).
  bool force_builtin_profile = false;
  /// Where the demo synthesizes a small real-file sample of the corpus (app::BuildDemoDataset)
  /// and prepares it, when ../shared/data/real is present.
  std::string work_dir = "demo-out";
};

/// A corpus shaped like plan::PretrainingMix (sources coco, mmc4, text, text-long) drawn from a
/// built-in seeded profile, for when the real data is absent: caption pairs of 8–40 text tokens
/// with COCO-like images (long side 640 px, aspect 4:3, 3:4, 1:1 or 16:9), documents of 150–900
/// text tokens with 2–12 images (long side log-uniform in [300, 1500] px), text-only documents
/// of 150–900 tokens and long ones of 1.5k–20k. `samples` caption pairs, the rest in proportion.
Result<cost::SampleTable> BuiltinProfileCorpus(uint32_t samples, uint64_t seed);

/// The demo's Qwen3-VL section: kQwen3VlImages COCO caption pairs and kQwen3VlVideos captioned
/// videos, metadata only (app::BuildQwen3VlDataset into `work_dir`/qwen3-vl), prepared under
/// the qwen3-vl vision preset and the qwen3_vl chat template (each video as timestamped groups
/// of two sampled frames, one vision item each), inspected, and planned vanilla beside mmpt
/// with `options`' LLM and hardware at 8K, DP 8, EP 8, GA 4 for 3 steps; its text ends with
/// how many samples, images and video group items mmpt's plan placed. Errors: those of
/// BuildQwen3VlDataset, the presets, Inspect and the planners.
inline constexpr uint64_t kQwen3VlImages = 600, kQwen3VlVideos = 150;
Result<ReportSection> Qwen3VlSection(const std::string& work_dir, const DemoOptions& options);

/// Run the demo: when ../shared/data/real is present, synthesize a small corpus with real image
/// files from it and prepare it (app::BuildDemoDataset), inspect it, read its `.meta` back and
/// plan it (vanilla beside mmpt, plan::ComparePlanners), do the same for an omni corpus
/// (images, video, speech: app::BuildOmniDataset) and for a Qwen3-VL corpus (images, and
/// videos as timestamped groups: app::BuildQwen3VlDataset), then plan the mixed real-data corpus
/// (plan::PretrainingMix); else plan BuiltinProfileCorpus. Simulate the seed's configurations;
/// write a self-contained HTML report to options.report_path. Returns the text
/// to print (corpus line, ablation tables with their parameters, the report's path).
/// Errors: those of the corpus, planners, simulation and WriteReport.
Result<std::string> RunDemo(const DemoOptions& options);

}  // namespace mmpt::app
