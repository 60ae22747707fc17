// Micro benchmarks of the planner: one global batch of ~1M samples, planned on one core.
// Run: build/release/src/mmpt/plan/mmpt_plan_bench
#include <benchmark/benchmark.h>

#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/presets.h"
#include "mmpt/pack/packer.h"
#include "mmpt/plan/planner.h"
#include "mmpt/corpora/real_corpora.h"

namespace mmpt::plan {
namespace {

struct Fixture {
  cost::SampleTable table;
  cost::CostModel model;
  cost::CostedSamples costs;
};

const Fixture& Coco() {
  static Fixture* f = [] {
    auto table = corpora::CocoCaptionsCorpus();
    auto model = cost::CostModel::FromPresets(cost::Defaults::kVision, cost::Defaults::kLlm,
                                              cost::Defaults::kHardware);
    if (!table.ok() || !model.ok()) std::abort();
    auto costs = cost::CostSamples(*table, *model);
    if (!costs.ok()) std::abort();
    return new Fixture{std::move(*table), std::move(*model), std::move(*costs)};
  }();
  return *f;
}

// DP 512 × GA 100 packs of 8192 tokens of COCO caption pairs (~430 tokens each): ~977k samples
// per global batch, ~39 times the corpus, so samples repeat (allow_repeat).
void BM_PlanStepMillionSamples(benchmark::State& state) {
  const Fixture& f = Coco();
  PlannerConfig config;
  config.layout.dp = 512;
  config.layout.ep = 8;
  config.layout.ga = 100;
  config.allow_repeat = true;
  auto planner = Planner::Create(f.table, f.costs, f.model, config);
  if (!planner.ok()) std::abort();
  uint64_t samples = 0;
  for (auto _ : state) {
    auto plan = planner->PlanStep();
    if (!plan.ok()) std::abort();
    samples += planner->last_stats().placed;
    benchmark::DoNotOptimize(plan->packs.data());
  }
  state.counters["samples_per_step"] = static_cast<double>(samples) / state.iterations();
  state.counters["samples_per_second"] =
      benchmark::Counter(static_cast<double>(samples), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PlanStepMillionSamples)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_BestFitDecreasingMillionItems(benchmark::State& state) {
  const Fixture& f = Coco();
  std::vector<pack::PackItem> items(1'000'000);
  for (size_t i = 0; i < items.size(); ++i) {
    uint64_t row = (i * 7919) % f.table.num_samples();
    items[i] = {f.table.text_tokens[row] + f.costs.image_tokens[row], 1};
  }
  auto algorithm = static_cast<pack::Algorithm>(state.range(0));
  for (auto _ : state) {
    auto packing = pack::PackItems(items, {8192, 0, 0}, algorithm);
    benchmark::DoNotOptimize(packing->items.data());
  }
  state.SetItemsProcessed(state.iterations() * items.size());
}
BENCHMARK(BM_BestFitDecreasingMillionItems)
    ->Arg(static_cast<int>(pack::Algorithm::kFirstFitDecreasing))
    ->Arg(static_cast<int>(pack::Algorithm::kBestFitDecreasing))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mmpt::plan
