// The exchange's placement at scale: one peer's send and receive lists at a step of 1,024 DP
// ranks × 128 micro-steps (~1.2M samples), beside planning that step, each on one core.
// Run: build/release/src/mmpt/dist/mmpt_dist_bench
#include <benchmark/benchmark.h>

#include <algorithm>
#include <optional>

#include "mmpt/corpora/real_corpora.h"
#include "mmpt/cost/presets.h"
#include "mmpt/dist/exchange.h"
#include "mmpt/plan/planner.h"

namespace mmpt::dist {

using namespace load;  // the loader and the Batch this module carries between ranks
namespace {

constexpr uint32_t kRanks = 1024;
constexpr uint64_t kShardSamples = 100;  // COCO's ~118k pairs in ~1.2k shards, over 1,024 peers

// A step of DP 1024 × GA 128 packs of 4096 tokens of COCO caption pairs (~430 tokens each; the
// corpus repeats within the step), and its planner.
struct Fixture {
  cost::SampleTable table;
  cost::CostModel model;
  std::optional<plan::Planner> planner;
};

plan::Planner& Planner() {
  static Fixture* f = [] {
    auto table = corpora::CocoCaptionsCorpus();
    auto model = cost::CostModel::FromPresets(cost::Defaults::kVision, cost::Defaults::kLlm,
                                              cost::Defaults::kHardware);
    if (!table.ok() || !model.ok()) std::abort();
    auto* fixture = new Fixture{std::move(*table), std::move(*model), {}};
    plan::PlannerConfig config;
    config.layout.dp = kRanks;
    config.layout.ga = 128;
    config.layout.seq_len = 4096;
    config.allow_repeat = true;
    auto planner = plan::Planner::Create(fixture->table, fixture->model, config);
    if (!planner.ok()) std::abort();
    fixture->planner.emplace(std::move(*planner));
    return fixture;
  }();
  return *f->planner;
}

void BM_PlanStep(benchmark::State& state) {
  for (auto _ : state) {
    auto plan = Planner().PlanStep();
    if (!plan.ok()) std::abort();
    state.counters["samples"] = static_cast<double>(plan->sequences.size());
  }
}
BENCHMARK(BM_PlanStep)->Unit(benchmark::kMillisecond)->Iterations(2);

void BM_ExchangeListsOfOnePeer(benchmark::State& state) {
  auto plan = Planner().PlanStep();
  uint64_t largest = 0;
  for (const plan::PlannedSequence& seq : plan->sequences) largest = std::max(largest, seq.index);
  const uint64_t shards = largest / kShardSamples + 1;
  auto placement = Placement::RoundRobin(shards, kRanks);
  if (!plan.ok() || !placement.ok()) std::abort();
  const ShardOf shard_of = [](uint32_t, uint64_t index) -> Result<size_t> {
    return index / kShardSamples;
  };
  std::vector<uint32_t> trainer(kRanks);
  for (uint32_t d = 0; d < kRanks; ++d) trainer[d] = d;
  uint64_t sent = 0;
  for (auto _ : state) {
    auto lists = PlanExchangeLists(*plan, *placement, shard_of, trainer, 7);
    if (!lists.ok()) std::abort();
    sent = 0;
    for (const auto& to : lists->send) sent += to.size();
    benchmark::DoNotOptimize(lists->receive.data());
  }
  state.counters["samples"] = static_cast<double>(plan->sequences.size());
  state.counters["sent_by_peer"] = static_cast<double>(sent);
}
BENCHMARK(BM_ExchangeListsOfOnePeer)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
}  // namespace mmpt::dist
