// `mmpt bench`: the dispatcher of whole-program benchmarks (bench.h); each lives in its own
// bench_<name>.cc.
#include "bench.h"

#include <algorithm>
#include <memory>
#include <utility>

namespace mmpt::cli {

std::vector<Command>& Benchmarks() {
  static std::vector<Command> benchmarks;
  return benchmarks;
}

bool RegisterBenchmark(Command benchmark) {
  Benchmarks().push_back(std::move(benchmark));
  return true;
}

namespace {

Action Setup(CLI::App& app) {
  app.require_subcommand(1);
  auto& benchmarks = Benchmarks();
  std::sort(benchmarks.begin(), benchmarks.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
  auto actions = std::make_shared<std::vector<std::pair<CLI::App*, Action>>>();
  for (const Command& benchmark : benchmarks) {
    CLI::App* sub = app.add_subcommand(benchmark.name, benchmark.summary);
    actions->emplace_back(sub, benchmark.setup(*sub));
  }
  return [actions]() -> Status {
    for (auto& [sub, action] : *actions) {
      if (sub->parsed()) return action();
    }
    return Status::InvalidArgument("name a benchmark (mmpt bench --help lists them)");
  };
}

const bool registered = RegisterCommand(
    {"bench", "Whole-program benchmarks: a baseline and mmpt from one run, as ratios", Setup});

}  // namespace
}  // namespace mmpt::cli
