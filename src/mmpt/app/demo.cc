#include "mmpt/app/demo.h"
#include "mmpt/app/reports.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "mmpt/app/demo_dataset.h"
#include "mmpt/app/demo_report.h"
#include "mmpt/corpora/real_corpora.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/ingest/metadata_jsonl.h"
#include "mmpt/plan/compare.h"
#include "mmpt/sim/corpus_ablation.h"
#include "mmpt/store/inspect.h"
#include "mmpt/store/planning_table.h"

namespace mmpt::app {

// Moved here from the sim module; its names are used unqualified.
using namespace mmpt::sim;
namespace {

// Uniform integer in [lo, hi] from a 64-bit draw (the same on every machine, unlike
// std::uniform_int_distribution).
uint32_t Draw(std::mt19937_64& rng, uint32_t lo, uint32_t hi) {
  return lo + static_cast<uint32_t>(rng() % (uint64_t{hi} - lo + 1));
}

double DrawUnit(std::mt19937_64& rng) { return (rng() >> 11) * 0x1.0p-53; }

// How the demo plans its prepared datasets (a few hundred to a thousand samples): GA 4, one EP
// group, vanilla packing from small buffers, a few steps, so the steps use most of each.
constexpr uint32_t kPreparedSteps = 3;
plan::PlannerConfig PreparedPlan(uint32_t seq_len, uint32_t dp) {
  plan::PlannerConfig config;
  config.layout.seq_len = seq_len;
  config.layout.dp = dp;
  config.layout.ep = dp;
  config.layout.ga = 4;
  config.layout.sync = plan::SyncModel::kMicrostep;
  config.vanilla_buffer = 32;
  return config;
}
// The `mmpt plan` command that reproduces `planned` (of `dir`, under `config`), and its table.
std::string PlanText(const std::string& dir, const plan::PlannerConfig& config,
                     const plan::Comparison& planned, std::string_view audio) {
  const plan::Layout& layout = config.layout;
  return fmt::format(
      "mmpt plan {} --seq-len {} --dp {} --ep {} --ga {} --steps {} "
      "--vanilla-buffer {}{}\n{}",
      dir, layout.seq_len, layout.dp, layout.ep, layout.ga, planned.steps, config.vanilla_buffer,
      audio.empty() ? std::string() : fmt::format(" --audio {}", audio), FormatComparison(planned));
}
// The small COCO + mmc4 sample: short packs, a small cluster.
plan::PlannerConfig SmallDatasetPlan() { return PreparedPlan(4096, 2); }
// The omni and Qwen3-VL corpora: the seed's sequence length and EP 8 group.
constexpr uint64_t kOmniSamples = 1000;
plan::PlannerConfig SeedLengthPlan() { return PreparedPlan(8192, 8); }

// A prepared dataset as a section shows it: inspected, its .meta tables read back (no JSON
// parsed) and planned vanilla beside mmpt.
struct PreparedView {
  store::InspectReport inspected;
  cost::SampleTable table;
  plan::Comparison planned;
};
Result<PreparedView> InspectAndPlan(const std::string& dir, const cost::CostModel& model,
                                    const plan::PlannerConfig& config) {
  PreparedView view;
  MMPT_ASSIGN_OR_RETURN(store::Dataset opened, store::Dataset::Open(dir));
  MMPT_ASSIGN_OR_RETURN(view.inspected, store::Inspect(opened));
  MMPT_ASSIGN_OR_RETURN(view.table, ingest::ReadPlanningTable(dir));
  MMPT_ASSIGN_OR_RETURN(view.planned,
                        plan::ComparePlanners(view.table, model, config, kPreparedSteps));
  return view;
}
// The section's text: what was synthesized, prepare's summary, `mmpt inspect` and `mmpt plan`.
std::string PreparedText(std::string_view synthesized, const ingest::PrepareReport& prepare,
                         const std::string& dir, const PreparedView& view,
                         const plan::PlannerConfig& config, std::string_view audio) {
  return fmt::format("synthesized: {}\n{}\nmmpt inspect {}\n{}\n{}", synthesized, prepare.Summary(),
                     dir, RenderInspectText(view.inspected),
                     PlanText(dir, config, view.planned, audio));
}

// Images, video and speech: `mmpt synth --profile omni --metadata-only`, prepared, inspected
// and planned vanilla beside mmpt, with the vision and audio encoders costed apart.
Result<ReportSection> OmniSection(const std::string& work_dir, const cost::CostModel& model) {
  app::DemoDatasetOptions options;
  options.work_dir = work_dir + "/omni";
  options.progress = false;
  MMPT_ASSIGN_OR_RETURN(app::OmniDataset omni, app::BuildOmniDataset(options, kOmniSamples));
  MMPT_ASSIGN_OR_RETURN(PreparedView view,
                        InspectAndPlan(omni.dataset_dir, model, SeedLengthPlan()));
  ReportSection section;
  section.id = "omni";
  section.title = "Omni corpus: images, video and speech";
  section.intro =
      "mmpt synth --profile omni --metadata-only described caption pairs, videos (COCO image "
      "sizes, drawn frame rates and lengths), speech (COCO captions spoken by espeak-ng, "
      "measured) and documents holding a video, without writing the media; mmpt prepare "
      "rendered them through Qwen2.5-Omni's chat template and tokenizer and counted their tokens "
      "(video by qwen-vl-utils' frame sampling, speech by the audio encoder's "
      "tokens a second); the planner balanced the vision encoder, the audio encoder and the LLM "
      "as a cost vector, vanilla beside mmpt (as mmpt plan does).";
  section.preformatted = PreparedText(
      fmt::format("{} samples: {} images, {} videos ({:.0f} s), {} speech clips ({:.0f} s)",
                  omni.synth.samples, omni.synth.images, omni.synth.videos,
                  omni.synth.video_seconds, omni.synth.audio_clips, omni.synth.audio_seconds),
      omni.prepare, omni.dataset_dir, view, SeedLengthPlan(),
      model.audio() ? model.audio()->name : "");
  return section;
}

}  // namespace

Result<ReportSection> Qwen3VlSection(const std::string& work_dir, const DemoOptions& options) {
  app::DemoDatasetOptions dataset_options;
  dataset_options.work_dir = work_dir + "/qwen3-vl";
  dataset_options.progress = false;
  MMPT_ASSIGN_OR_RETURN(app::Qwen3VlDataset qwen3,
                        app::BuildQwen3VlDataset(dataset_options, kQwen3VlImages, kQwen3VlVideos));
  MMPT_ASSIGN_OR_RETURN(cost::CostModel model,
                        cost::CostModel::FromPresets("qwen3-vl", options.llm, options.hardware));
  MMPT_ASSIGN_OR_RETURN(PreparedView view,
                        InspectAndPlan(qwen3.dataset_dir, model, SeedLengthPlan()));
  ReportSection section;
  section.id = "qwen3-vl";
  section.title = "Qwen3-VL corpus: images and timestamped video groups";
  section.intro =
      "mmpt synth --profile coco and --profile video (--metadata-only) described COCO caption "
      "pairs and captioned videos (COCO image sizes, drawn frame rates and lengths); mmpt "
      "prepare rendered them with the qwen3-vl vision preset (16-pixel patches, Hugging Face's "
      "video budget over all sampled frames) through the qwen3_vl chat template, which writes "
      "each video as timestamped groups: each temporal group of two sampled frames is "
      "'<t seconds>' as text, then its own <|vision_start|>, pads and <|vision_end|>, and is "
      "its own vision item, costed and placed as a one-step grid; the planner read the groups "
      "back from the .meta tables and planned them vanilla beside mmpt.";
  section.preformatted = PreparedText(
      fmt::format("{} caption pairs ({} images), {} videos ({:.0f} s) written as {} timestamped "
                  "groups",
                  qwen3.images.samples, qwen3.images.images, qwen3.videos.videos,
                  qwen3.videos.video_seconds, view.table.num_videos()),
      qwen3.prepare, qwen3.dataset_dir, view, SeedLengthPlan(), "");
  section.preformatted +=
      fmt::format("\nmmpt's plan ({} steps) placed {} samples: {} images and {} video group items",
                  kPreparedSteps, view.planned.mmpt.placed, view.planned.mmpt.images,
                  view.planned.mmpt.video_items);
  return section;
}

std::vector<DemoConfiguration> SeedConfigurations(const std::vector<double>& weights) {
  DemoConfiguration seed{"seed: EP 8, TP=PP=CP=1, 8K, GA 128", {}};
  plan::Layout& a = seed.planner.layout;
  a.dp = 8;
  a.ep = 8;
  a.ga = 128;
  a.seq_len = 8192;
  a.sync = plan::SyncModel::kMicrostep;
  seed.planner.source_weights = weights;
  // The seed's global batch is larger than the real-data corpora (the mix's 107 mmc4 documents
  // at weight 0.10 come back several times a step): its steps repeat samples.
  seed.planner.allow_repeat = true;
  DemoConfiguration cp{"seed CP: CP 2, 24K, GA 32", seed.planner};
  plan::Layout& b = cp.planner.layout;
  b.cp = 2;
  b.seq_len = 24576;
  b.ga = 32;
  return {seed, cp};
}

Result<cost::SampleTable> BuiltinProfileCorpus(uint32_t samples, uint64_t seed) {
  std::mt19937_64 rng(seed);
  cost::SampleTableBuilder builder;
  const uint32_t coco = builder.AddSource("coco"), mmc4 = builder.AddSource("mmc4");
  const uint32_t text = builder.AddSource("text"), text_long = builder.AddSource("text-long");
  constexpr std::pair<uint32_t, uint32_t> kAspects[] = {{4, 3}, {3, 4}, {1, 1}, {16, 9}};
  auto sized = [&](double long_side) {
    const auto [w, h] = kAspects[rng() % 4];
    const double scale = long_side / std::max(w, h);
    return cost::ImageSize{std::max(1u, static_cast<uint32_t>(w * scale)),
                           std::max(1u, static_cast<uint32_t>(h * scale))};
  };
  std::vector<cost::ImageSize> images;
  for (uint32_t i = 0; i < samples; ++i) {
    images = {sized(640)};
    MMPT_RETURN_IF_ERROR(builder.Add(coco, Draw(rng, 8, 40) + 12, images));
  }
  for (uint32_t i = 0; i < samples / 50 + 1; ++i) {
    images.clear();
    for (uint32_t k = Draw(rng, 2, 12); k > 0; --k) {
      images.push_back(sized(300 * std::exp(DrawUnit(rng) * std::log(5.0))));
    }
    MMPT_RETURN_IF_ERROR(builder.Add(mmc4, Draw(rng, 150, 900), images));
    MMPT_RETURN_IF_ERROR(builder.Add(text, Draw(rng, 150, 900), {}));
  }
  for (uint32_t i = 0; i < samples / 200 + 1; ++i) {
    MMPT_RETURN_IF_ERROR(builder.Add(text_long, Draw(rng, 1500, 20000), {}));
  }
  return std::move(builder).Finish();
}

Result<std::string> RunDemo(const DemoOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  std::string corpus_name;
  Result<cost::SampleTable> corpus = Status::NotFound("no corpus");
  const bool real = !options.force_builtin_profile &&
                    std::filesystem::exists(corpora::RealDataPath(corpora::kCocoCaptionsFile));
  if (real) {
    corpus = corpora::PretrainingMixCorpus();
    corpus_name =
        "mixed real-data corpus (COCO captions, mmc4 documents, text-only; "
        "../shared/data/real)";
  } else {
    corpus = BuiltinProfileCorpus(25000, 1);
    corpus_name = "built-in profile corpus (../shared/data/real absent)";
  }
  if (!corpus.ok()) return corpus.status();
  const cost::SampleTable& table = *corpus;
  MMPT_ASSIGN_OR_RETURN(cost::CostModel model, cost::CostModel::FromPresets(
                                                   options.vision, options.llm, options.hardware));
  MMPT_ASSIGN_OR_RETURN(cost::CostedSamples costs, cost::CostSamples(table, model));
  const std::vector<double> weights(std::begin(corpora::kPretrainingMixWeights),
                                    std::end(corpora::kPretrainingMixWeights));

  std::string out = fmt::format("mmpt demo: {}\n  {} samples, {} images, sources:", corpus_name,
                                table.num_samples(), table.num_images());
  for (size_t s = 0; s < table.num_sources(); ++s) {
    out += fmt::format(" {} ({}, weight {:g})", table.source_names[s], table.source_size(s),
                       weights[s]);
  }
  out += fmt::format("\n  models: vision {}, llm {}, hardware {}\n\n", options.vision, options.llm,
                     options.hardware);

  // The store path, on a small sample with real image files: synthesize, prepare, read back.
  ReportSection prepared, omni, qwen3_vl;
  if (real) {
    app::DemoDatasetOptions dataset_options;
    dataset_options.work_dir = options.work_dir;
    dataset_options.progress = false;
    MMPT_ASSIGN_OR_RETURN(app::DemoDataset dataset, app::BuildDemoDataset(dataset_options));
    MMPT_ASSIGN_OR_RETURN(PreparedView view,
                          InspectAndPlan(dataset.dataset_dir, model, SmallDatasetPlan()));
    prepared.id = "prepared";
    prepared.title = "Prepared dataset (a real-file sample of the corpus)";
    prepared.intro =
        "mmpt synth wrote caption pairs and interleaved documents with real image files from the "
        "real COCO and mmc4 metadata; mmpt prepare turned them into shards (.jsonl, .jsonl.idx, "
        "STORED .zip, .meta, .tok); mmpt inspect summarized it; the planner read the .meta tables "
        "back without parsing JSON and planned it, vanilla beside mmpt (as mmpt plan does).";
    prepared.preformatted =
        PreparedText(fmt::format("{} COCO caption pairs, {} mmc4 documents, {} images, {:.1f} MB",
                                 dataset.coco.samples, dataset.mmc4.samples,
                                 dataset.coco.images + dataset.mmc4.images,
                                 (dataset.coco.image_bytes + dataset.mmc4.image_bytes) / 1e6),
                     dataset.prepare, dataset.dataset_dir, view, SmallDatasetPlan(), "");
    out += "prepared dataset: " + prepared.preformatted + "\n";
    MMPT_ASSIGN_OR_RETURN(omni, OmniSection(options.work_dir, model));
    out += "omni corpus: " + omni.preformatted + "\n";
    MMPT_ASSIGN_OR_RETURN(qwen3_vl, Qwen3VlSection(options.work_dir, options));
    out += "qwen3-vl corpus: " + qwen3_vl.preformatted + "\n";
  }

  std::vector<ConfigAblation> results;
  for (const DemoConfiguration& config : SeedConfigurations(weights)) {
    AblationOptions ablation_options;
    ablation_options.steps = options.steps;
    auto ablation = RunCorpusAblation(table, model, config.planner, ablation_options);
    if (!ablation.ok()) return ablation.status().WithContext(config.name);
    out += fmt::format("== {} ==\n{}\n", config.name, FormatAblation(*ablation));
    results.push_back({config.name, config.planner.layout, std::move(*ablation)});
  }

  Report report;
  report.title = "mmpt: what each optimization buys";
  report.subtitle = fmt::format(
      "{} · {} samples · vision {}, LLM {}, {} · simulated, not "
      "measured: every number follows from the plans and the printed "
      "parameters",
      corpus_name, table.num_samples(), options.vision, options.llm, options.hardware);
  report.sections.push_back(AblationSection(results));
  report.sections.push_back(CorpusSection(table, costs, options.vision));
  report.sections.push_back(LoadSection(results.front()));
  report.sections.push_back(CpSection(results.back()));
  if (!prepared.id.empty()) report.sections.push_back(prepared);
  if (!omni.id.empty()) report.sections.push_back(omni);
  if (!qwen3_vl.id.empty()) report.sections.push_back(qwen3_vl);
  for (const ReportSection& extra : options.extra_sections) report.sections.push_back(extra);
  report.sections.push_back(ParametersSection(results));
  MMPT_RETURN_IF_ERROR(WriteReport(report, options.report_path));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out += fmt::format("report: {} ({:.1f} s)\n", options.report_path, seconds);
  return out;
}

}  // namespace mmpt::app
