// Micro benchmarks of the planner: one global batch of ~1M samples, planned on one core.
// Run: build/release/src/mmpt/plan/mmpt_plan_bench
#include <benchmark/benchmark.h>

#include "mmpt/corpora/real_corpora.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/presets.h"
#include "mmpt/pack/packer.h"
#include "mmpt/plan/planner.h"

namespace mmpt::plan {
namespace {

struct Fixture {
  cost::SampleTable table;
  cost::CostModel model;
  cost::CostedSamples costs;
};

Fixture* Costed(cost::SampleTable table) {
  auto model = cost::CostModel::FromPresets(cost::Defaults::kVision, cost::Defaults::kLlm,
                                            cost::Defaults::kHardware);
  if (!model.ok()) std::abort();
  auto costs = cost::CostSamples(table, *model);
  if (!costs.ok()) std::abort();
  return new Fixture{std::move(table), std::move(*model), std::move(*costs)};
}

const Fixture& Coco() {
  static Fixture* f = [] {
    auto table = corpora::CocoCaptionsCorpus();
    if (!table.ok()) std::abort();
    return Costed(std::move(*table));
  }();
  return *f;
}

// The COCO pairs 100 times over as distinct samples (2.5M): larger than a ~1M-sample step, so
// it is planned with each sample once per step as well as with repeats allowed.
const Fixture& CocoTimes100() {
  static Fixture* f = [] {
    const cost::SampleTable& coco = Coco().table;
    cost::SampleTableBuilder builder;
    const uint32_t source = builder.AddSource("coco");
    for (int copy = 0; copy < 100; ++copy) {
      for (uint64_t row = 0; row < coco.num_samples(); ++row) {
        std::span<const uint32_t> positions(&coco.image_text_positions[coco.image_begin[row]],
                                            coco.ImagesOf(row).size());
        if (!builder.Add(source, coco.text_tokens[row], coco.ImagesOf(row), positions).ok()) {
          std::abort();
        }
      }
    }
    auto table = std::move(builder).Finish();
    if (!table.ok()) std::abort();
    return Costed(std::move(*table));
  }();
  return *f;
}

// A step of DP 512 × GA 100 packs of 8192 tokens (EP 8).
PlannerConfig MillionSampleStep(bool allow_repeat) {
  PlannerConfig config;
  config.layout.dp = 512;
  config.layout.ep = 8;
  config.layout.ga = 100;
  config.allow_repeat = allow_repeat;
  return config;
}

void PlanSteps(benchmark::State& state, const Fixture& f, const PlannerConfig& config) {
  auto planner = Planner::Create(f.table, f.model, config);
  if (!planner.ok()) std::abort();
  uint64_t samples = 0;
  StepStats::Phases phases;  // summed over the steps
  StepPlan last;             // each step in the memory of the one before, as a long run plans
  for (auto _ : state) {
    auto plan = planner->PlanStep(std::move(last));
    if (!plan.ok()) std::abort();
    const StepStats& stats = planner->last_stats();
    samples += stats.placed;
    phases.draw += stats.phase_seconds.draw;
    phases.pack += stats.phase_seconds.pack;
    phases.cp += stats.phase_seconds.cp;
    phases.balance += stats.phase_seconds.balance;
    phases.assemble += stats.phase_seconds.assemble;
    benchmark::DoNotOptimize(plan->packs.data());
    last = std::move(*plan);
  }
  const double steps = static_cast<double>(state.iterations());
  state.counters["draw_s"] = phases.draw / steps;
  state.counters["pack_s"] = phases.pack / steps;
  state.counters["cp_s"] = phases.cp / steps;
  state.counters["balance_s"] = phases.balance / steps;
  state.counters["assemble_s"] = phases.assemble / steps;
  state.counters["samples_per_step"] = static_cast<double>(samples) / state.iterations();
  state.counters["samples_per_second"] =
      benchmark::Counter(static_cast<double>(samples), benchmark::Counter::kIsRate);
}

// DP 512 × GA 100 packs of 8192 tokens of COCO caption pairs (~430 tokens each): ~977k samples
// per global batch, ~39 times the corpus, so samples repeat (allow_repeat).
void BM_PlanStepMillionSamples(benchmark::State& state) {
  PlanSteps(state, Coco(), MillionSampleStep(true));
}
BENCHMARK(BM_PlanStepMillionSamples)->Unit(benchmark::kMillisecond)->Iterations(5);

// The same step on 100 × COCO: each sample once per step (argument 0: the marks of the samples
// in the step, deferral at the wraps) against the stream packed as drawn (1).
void BM_PlanStepMillionSamplesLargeCorpus(benchmark::State& state) {
  PlanSteps(state, CocoTimes100(), MillionSampleStep(state.range(0) != 0));
}
BENCHMARK(BM_PlanStepMillionSamplesLargeCorpus)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

void BM_BestFitDecreasingMillionItems(benchmark::State& state) {
  const Fixture& f = Coco();
  std::vector<pack::PackItem> items(1'000'000);
  for (size_t i = 0; i < items.size(); ++i) {
    uint64_t row = (i * 7919) % f.table.num_samples();
    items[i] = {f.table.text_tokens[row] + f.costs.MediaTokens(row), 1};
  }
  auto algorithm = static_cast<pack::Algorithm>(state.range(0));
  uint64_t packs = 0;
  for (auto _ : state) {
    auto packing = pack::PackItems(items, {8192, 0, 0}, algorithm);
    benchmark::DoNotOptimize(packing->items.data());
    packs = packing->num_packs();
  }
  state.SetItemsProcessed(state.iterations() * items.size());
  // What the packing achieved (the same every iteration): packs and their mean fill.
  uint64_t tokens = 0;
  for (const pack::PackItem& item : items) tokens += item.tokens;
  state.counters["packs"] = static_cast<double>(packs);
  state.counters["fill"] = static_cast<double>(tokens) / (static_cast<double>(packs) * 8192);
}
BENCHMARK(BM_BestFitDecreasingMillionItems)
    ->Arg(static_cast<int>(pack::Algorithm::kFirstFitDecreasing))
    ->Arg(static_cast<int>(pack::Algorithm::kBestFitDecreasing))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mmpt::plan
