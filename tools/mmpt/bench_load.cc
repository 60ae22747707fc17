// `mmpt bench load`: the loader against a straightforward Python loader on the same
// micro-steps (ratio), then a long run with resident memory sampled. Under mpirun every rank
// loads its DP share and the ranks check that their plans agree.
#include <cstdio>
#include <string>

#include "bench.h"
#include "mmpt/comm/communicator.h"
#include "mmpt/app/load_benchmark.h"

namespace mmpt::cli {
namespace {

struct Options {
  app::LoadBenchmarkOptions bench;
  std::string sync = "step";
  bool no_baseline = false;
};

Action Setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app::LoadBenchmarkOptions& b = o->bench;
  b.plans.planner.layout.seq_len = 8192;
  b.baseline_script = MMPT_SOURCE_DIR "/bench/python_loader_baseline.py";
  app.add_option("dataset", b.dataset, "Prepared dataset directory (mmpt prepare)")->required();
  app.add_option("--threads", b.threads, "Loader threads (= baseline worker processes)")
      ->capture_default_str();
  app.add_option("--prefetch", b.prefetch, "Micro-steps loaded ahead")->capture_default_str();
  app.add_option("--compare", b.compare_micro_steps,
                 "Micro-steps both loaders run for the ratio")
      ->capture_default_str();
  app.add_option("--seconds", b.long_run_seconds, "Length of the long run (mmpt alone)")
      ->capture_default_str();
  app.add_option("--seq-len", b.plans.planner.layout.seq_len, "Tokens per pack")
      ->capture_default_str();
  app.add_option("--dp", b.plans.planner.layout.dp, "DP ranks of the plan (at least the MPI ranks)")
      ->capture_default_str();
  app.add_option("--ga", b.plans.planner.layout.ga, "Micro-steps per step")->capture_default_str();
  app.add_option("--mbs", b.plans.planner.layout.mbs, "Packs per micro-step")
      ->capture_default_str();
  app.add_option("--seed", b.plans.planner.seed, "Planner seed")->capture_default_str();
  app.add_option("--sync", o->sync, "Sync model: step, microstep, pipeline")->capture_default_str();
  app.add_option("--vision", b.plans.vision, "Vision preset")->capture_default_str();
  app.add_option("--llm", b.plans.llm, "LLM preset")->capture_default_str();
  app.add_option("--hardware", b.plans.hardware, "Hardware preset")->capture_default_str();
  app.add_option("--python", b.python, "Python for the baseline")->capture_default_str();
  app.add_option("--baseline", b.baseline_script, "Baseline loader script")
      ->capture_default_str();
  app.add_flag("--no-baseline", o->no_baseline, "Run mmpt only");
  return [o]() -> Status {
    MMPT_ASSIGN_OR_RETURN(o->bench.plans.planner.layout.sync, plan::ParseSyncModel(o->sync));
    if (o->no_baseline) o->bench.baseline_script.clear();
    MMPT_ASSIGN_OR_RETURN(std::unique_ptr<comm::Communicator> comm, comm::WorldCommunicator());
    o->bench.comm = comm.get();
    MMPT_ASSIGN_OR_RETURN(app::LoadBenchmarkResult result, app::RunLoadBenchmark(o->bench));
    std::fputs(app::FormatLoadBenchmark(result).c_str(), stdout);
    std::fflush(stdout);
    return comm->Barrier();
  };
}

const bool registered = RegisterBenchmark(
    {"load", "Loader batches/s vs a Python (Energon-style) loader, and RSS over a long run",
     Setup});

}  // namespace
}  // namespace mmpt::cli
