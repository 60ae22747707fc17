#pragma once

// `mmpt bench <name>`: whole-program benchmarks that print a baseline and mmpt side by side
// from one run. Each benchmark is one file (bench_<name>.cc); bench.cc lists them.

#include "command.h"

namespace mmpt::cli {

/// `mmpt bench load`.
Command BenchLoadCommand();

}  // namespace mmpt::cli
