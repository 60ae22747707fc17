#include "mmpt/app/demo_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "mmpt/app/svg_chart.h"

namespace mmpt::app {

// Moved here from the sim module; its names are used unqualified.
using namespace mmpt::sim;
namespace {

constexpr char kVisionColor[] = "#e15759";
constexpr char kLlmColor[] = "#4e79a7";
constexpr const char* kPolicyColors[] = {"#bab0ac", "#f28e2b", "#59a14f"};

// Per (rank, micro-step): the CP group's slowest vision plus its slowest LLM shard.
std::vector<double> GroupLoad(const StepSim& sim) {
  std::vector<double> load(size_t{sim.dp} * sim.ga, 0.0);
  for (uint32_t d = 0; d < sim.dp; ++d) {
    for (uint32_t m = 0; m < sim.ga; ++m) {
      double v = 0, l = 0;
      for (uint32_t r = 0; r < sim.cp; ++r) {
        v = std::max(v, sim.at(d, m, r).vision_seconds);
        l = std::max(l, sim.at(d, m, r).llm_seconds);
      }
      load[size_t{d} * sim.ga + m] = v + l;
    }
  }
  return load;
}

}  // namespace

ReportSection CorpusSection(const cost::SampleTable& table, const cost::CostedSamples& costs,
                            const std::string& vision_name) {
  ReportSection s;
  s.id = "corpus";
  s.title = "Corpus";
  s.intro = fmt::format(
      "What the planner reads: per sample its text tokens and image sizes. Image tokens follow "
      "the {} resolution rule; a sample's LLM tokens are its text plus its image tokens.",
      vision_name);
  s.table_header = {"source", "samples", "images", "text tokens", "image tokens"};
  std::vector<double> sample_tokens, megapixels, image_tokens;
  for (size_t src = 0; src < table.num_sources(); ++src) {
    uint64_t images = 0, text = 0, itok = 0;
    for (uint64_t row = table.source_begin[src]; row < table.source_begin[src + 1]; ++row) {
      images += table.image_begin[row + 1] - table.image_begin[row];
      text += table.text_tokens[row];
      itok += costs.image_tokens[row];
      sample_tokens.push_back(static_cast<double>(table.text_tokens[row]) +
                              costs.image_tokens[row]);
    }
    s.table_rows.push_back({table.source_names[src], fmt::format("{}", table.source_size(src)),
                            fmt::format("{}", images), fmt::format("{}", text),
                            fmt::format("{}", itok)});
  }
  for (size_t i = 0; i < table.num_images(); ++i) {
    megapixels.push_back(static_cast<double>(table.images[i].width) * table.images[i].height / 1e6);
    image_tokens.push_back(costs.images[i].llm_tokens);
  }
  s.figures.push_back(RenderHistogram(
      MakeHistogram("LLM tokens per sample", "tokens (log bins)", sample_tokens, 30, true)));
  if (!megapixels.empty()) {
    s.figures.push_back(RenderHistogram(
        MakeHistogram("Image size", "megapixels (log bins)", megapixels, 30, true)));
    Histogram tokens = MakeHistogram("LLM tokens per image", "tokens", image_tokens, 30);
    tokens.color = kVisionColor;
    s.figures.push_back(RenderHistogram(tokens));
  }
  return s;
}

ReportSection AblationSection(const std::vector<ConfigAblation>& configs) {
  ReportSection s;
  s.id = "ablation";
  s.title = "Ablation: what each optimization buys";
  s.intro =
      "Each stage is simulated on the plans the planners make for this corpus (sim/step_model.h):"
      " per rank and micro-step the vision time of the images it encodes plus the LLM time of "
      "its CP shard, synchronized as the layout synchronizes. Throughput is real tokens per "
      "second relative to vanilla; 'bound' is the step time with perfect balance.";
  s.table_header = {"configuration", "stage", "step (s)", "vs vanilla", "vs previous", "bound (s)"};
  for (const ConfigAblation& c : configs) {
    BarChart chart;
    chart.title = c.name;
    chart.y_label = "throughput vs vanilla";
    chart.height = 300;
    BarSeries series{"relative throughput", "#59a14f", {}};
    for (const AblationRow& row : c.ablation.rows) {
      s.table_rows.push_back({c.name, row.stage, fmt::format("{:.3f}", row.step_seconds),
                              fmt::format("{:.1f}%", 100 * row.relative),
                              fmt::format("{:+.1f}%", 100 * (row.vs_previous - 1)),
                              fmt::format("{:.3f}", row.lower_bound_seconds)});
      // Short category labels: the stage's first words.
      std::string label = row.stage.substr(0, row.stage.find(" ("));
      if (label.rfind("+ ", 0) == 0) label = label.substr(2);
      if (!row.cumulative) label = "alt: by count";
      chart.categories.push_back(label);
      series.values.push_back(row.relative);
    }
    chart.series.push_back(series);
    chart.reference = 1.0;
    chart.reference_label = "vanilla";
    s.figures.push_back(RenderBarChart(chart));
  }
  return s;
}

ReportSection LoadSection(const ConfigAblation& config) {
  ReportSection s;
  s.id = "load";
  s.title =
      fmt::format("Per-rank load per micro-step, before and after balancing ({})", config.name);
  s.intro =
      "Each cell is one DP rank's work in one micro-step (vision + LLM seconds, the CP group's "
      "slowest shard). Before: the planner's global packs dealt in packing order, consecutive "
      "packs filling one micro-step of every rank (no reordering). After: as the balancer placed "
      "them. Bars: each rank's total against the perfect-balance bound.";
  const StepSim* sims[] = {&config.ablation.unbalanced, &config.ablation.balanced};
  const char* names[] = {"before balancing", "after balancing"};
  double max = 0;
  std::vector<double> loads[2];
  for (int i = 0; i < 2; ++i) {
    loads[i] = GroupLoad(*sims[i]);
    for (double v : loads[i]) max = std::max(max, v);
  }
  for (int i = 0; i < 2; ++i) {
    const StepSim& sim = *sims[i];
    HeatMap map;
    map.title = fmt::format("{}: step {:.2f} s", names[i], sim.step_seconds);
    map.row_label = "DP rank";
    map.column_label = "micro-step";
    map.rows = sim.dp;
    map.columns = sim.ga;
    map.values = loads[i];
    map.max_value = max;
    s.figures.push_back(RenderHeatMap(map));
  }
  for (int i = 0; i < 2; ++i) {
    const StepSim& sim = *sims[i];
    BarChart chart;
    chart.title = fmt::format("Per-rank step work, {}", names[i]);
    chart.y_label = "seconds";
    chart.stacked = true;
    chart.width = 460;
    BarSeries vision{"vision", kVisionColor, {}}, llm{"LLM", kLlmColor, {}};
    for (uint32_t d = 0; d < sim.dp; ++d) {
      chart.categories.push_back(fmt::format("{}", d));
      double v = 0, l = 0;
      for (uint32_t m = 0; m < sim.ga; ++m) {
        double mv = 0, ml = 0;
        for (uint32_t r = 0; r < sim.cp; ++r) {
          mv = std::max(mv, sim.at(d, m, r).vision_seconds);
          ml = std::max(ml, sim.at(d, m, r).llm_seconds);
        }
        v += mv;
        l += ml;
      }
      vision.values.push_back(v);
      llm.values.push_back(l);
    }
    chart.series = {vision, llm};
    chart.reference = sim.lower_bound_seconds;
    chart.reference_label = "bound";
    s.figures.push_back(RenderBarChart(chart));
  }
  return s;
}

ReportSection CpSection(const ConfigAblation& config) {
  ReportSection s;
  s.id = "cp";
  s.title = fmt::format("CP vision load per policy ({})", config.name);
  s.intro =
      "With context parallelism a pack is split over the CP group (Transformer Engine's THD "
      "split) and its images must be encoded somewhere. naive: each rank encodes the images whose "
      "tokens land in its chunks (an image straddling ranks is encoded by each). count: vision "
      "DP splitting the pack's images evenly by count (Megatron Bridge). cost: vision DP "
      "balancing vision cost (mmpt). Shown per pack: the most-loaded CP rank's vision cost over "
      "the pack's vision cost / CP (1 is perfect; 2 at CP 2 means one rank does it all).";
  s.table_header = {"policy", "mean max/ideal", "p95", "max", "tokens/s"};
  BarChart chart;
  chart.title = "most-loaded CP rank's vision cost / ideal, per pack";
  chart.y_label = "max / ideal";
  BarSeries mean{"mean", "#4e79a7", {}}, p95{"p95", "#f28e2b", {}};
  for (const PolicyRow& p : config.ablation.policies) {
    const std::string name(cp::VisionPolicyName(p.policy));
    s.table_rows.push_back(
        {name, fmt::format("{:.3f}", p.mean_imbalance), fmt::format("{:.3f}", p.p95_imbalance),
         fmt::format("{:.3f}", p.max_imbalance), fmt::format("{:.0f}", p.tokens_per_second)});
    chart.categories.push_back(name);
    mean.values.push_back(p.mean_imbalance);
    p95.values.push_back(p.p95_imbalance);
  }
  chart.series = {mean, p95};
  chart.reference = 1.0;
  chart.reference_label = "perfect";
  s.figures.push_back(RenderBarChart(chart));
  for (const PolicyRow& p : config.ablation.policies) {
    Histogram h =
        MakeHistogram(fmt::format("{}: max / ideal per pack", cp::VisionPolicyName(p.policy)),
                      "max / ideal", p.imbalance, 20);
    h.color = kPolicyColors[static_cast<int>(p.policy) % 3];
    s.figures.push_back(RenderHistogram(h));
  }
  return s;
}

ReportSection ParametersSection(const std::vector<ConfigAblation>& configs) {
  ReportSection s;
  s.id = "parameters";
  s.title = "Parameters";
  s.intro = "Every assumption of the model, by name; change any with `mmpt simulate --help`.";
  for (const ConfigAblation& c : configs) {
    s.preformatted += c.name + ":\n" + c.ablation.parameters + "\n";
  }
  return s;
}

}  // namespace mmpt::app
