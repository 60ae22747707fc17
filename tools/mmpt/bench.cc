// `mmpt bench`: the dispatcher of whole-program benchmarks (bench.h); each lives in its own
// bench_<name>.cc.
#include "bench.h"

namespace mmpt::cli {

Command BenchCommand() {
  return {"bench", "Whole-program benchmarks: a baseline and mmpt from one run, as ratios",
          [](CLI::App& app) { return AddSubcommands(app, {BenchLoadCommand()}); }};
}

}  // namespace mmpt::cli
