#pragma once

// `mmpt bench <name>`: whole-program benchmarks that print a baseline and mmpt side by side
// from one run. Each benchmark is one file (bench_<name>.cc) that calls RegisterBenchmark from
// a static initializer, the way subcommands register with RegisterCommand.

#include <vector>

#include "command.h"

namespace mmpt::cli {

/// Add `mmpt bench <benchmark.name>`. Returns true (for static registration).
bool RegisterBenchmark(Command benchmark);

/// Every registered benchmark, in registration order.
std::vector<Command>& Benchmarks();

}  // namespace mmpt::cli
