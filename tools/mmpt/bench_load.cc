// `mmpt bench load`: the loader against a straightforward Python loader on the same
// micro-steps (ratio), then a long run with resident memory sampled. Under mpirun every rank
// loads its DP share and the ranks check that their plans agree.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "bench.h"
#include "mmpt/app/load_benchmark.h"
#include "mmpt/comm/communicator.h"
#include "mmpt/core/data_dir.h"
#include "mmpt/core/thread_pool.h"
#include "options.h"

namespace mmpt::cli {
namespace {

struct Options {
  app::LoadBenchmarkOptions bench;
  LayoutOptions layout;
  PresetOptions presets;
  size_t threads = 0;
  bool no_baseline = false;
  bool json = false;
};

// The figures as one JSON object: each loader's run and the long run.
std::string ResultJson(const app::LoadBenchmarkResult& r) {
  auto run = [](const app::LoaderRun& l) {
    return nlohmann::ordered_json{{"micro_steps", l.micro_steps},
                                  {"images", l.images},
                                  {"tokens", l.tokens},
                                  {"seconds", l.seconds},
                                  {"batches_per_second", l.batches_per_second()},
                                  {"images_per_second", l.images_per_second()},
                                  {"peak_rss_bytes", l.peak_rss_bytes}};
  };
  nlohmann::ordered_json out = {
      {"rank", r.rank}, {"ranks", r.ranks}, {"threads", r.threads}, {"mmpt", run(r.mmpt)}};
  if (r.baseline.micro_steps > 0) {
    out["baseline"] = run(r.baseline);
    out["ratio"] = r.baseline.batches_per_second() > 0
                       ? r.mmpt.batches_per_second() / r.baseline.batches_per_second()
                       : 0.0;
  }
  out["long_run"] = {
      {"micro_steps", r.long_micro_steps},      {"seconds", r.long_seconds},
      {"rss_peak_bytes", r.rss_peak_bytes},     {"rss_steady_bytes", r.rss_steady_bytes},
      {"rss_growth_bytes", r.rss_growth_bytes}, {"rss_samples", r.rss_samples}};
  return out.dump(2) + "\n";
}

Status Run(Options& o) {
  app::LoadBenchmarkOptions& b = o.bench;
  MMPT_ASSIGN_OR_RETURN(b.plans.planner.layout, o.layout.Get());
  b.plans.vision = o.presets.vision;  // empty: the dataset's (PlanStream::Open)
  b.plans.audio = o.presets.audio;
  b.plans.llm = o.presets.llm;
  b.plans.hardware = o.presets.hardware;
  b.threads = WorkerThreads(o.threads);
  if (o.no_baseline) {
    b.baseline_script.clear();
  } else if (b.baseline_script.empty()) {
    MMPT_ASSIGN_OR_RETURN(std::string data_dir, DataDir());
    b.baseline_script = data_dir + "/bench/python_loader_baseline.py";
  }
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<comm::Communicator> comm, comm::WorldCommunicator());
  b.comm = comm.get();
  MMPT_ASSIGN_OR_RETURN(app::LoadBenchmarkResult result, app::RunLoadBenchmark(b));
  std::fputs((o.json ? ResultJson(result) : app::FormatLoadBenchmark(result)).c_str(), stdout);
  std::fflush(stdout);
  return comm->Barrier();
}

}  // namespace

Command BenchLoadCommand() {
  return {"load", "Loader batches/s vs a Python (Energon-style) loader, and RSS over a long run",
          [](CLI::App& app) -> Action {
            auto o = std::make_shared<Options>();
            app::LoadBenchmarkOptions& b = o->bench;
            AddDataset(app, &b.dataset);
            AddThreads(app, &o->threads);
            o->layout.Add(app);
            o->presets.Add(app);
            app.add_option("--prefetch-micro-steps", b.prefetch_micro_steps,
                           "Micro-steps loaded ahead")
                ->capture_default_str();
            app.add_option("--compare", b.compare_micro_steps,
                           "Micro-steps both loaders run for the ratio")
                ->capture_default_str();
            app.add_option("--seconds", b.long_run_seconds, "Length of the long run (mmpt alone)")
                ->capture_default_str();
            app.add_option("--seed", b.plans.planner.seed, "Planner seed")->capture_default_str();
            AddAllowRepeat(app, &b.plans.planner.allow_repeat);
            app.add_option("--python", b.python, "Python for the baseline")->capture_default_str();
            app.add_option("--baseline", b.baseline_script,
                           "Baseline loader script (its worker processes: --threads); default: "
                           "bench/python_loader_baseline.py in mmpt's data directory");
            app.add_flag("--no-baseline", o->no_baseline, "Run mmpt only");
            AddJson(app, &o->json);
            return [o] { return Run(*o); };
          }};
}

}  // namespace mmpt::cli
