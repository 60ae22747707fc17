#pragma once

// `mmpt bench load`: the loader against a straightforward Python loader on the same
// micro-steps of the same dataset (throughput ratio from one run), then the loader alone over
// a long run with its resident memory sampled (peak, steady, growth).

#include <cstdint>
#include <string>

#include "mmpt/comm/communicator.h"
#include "mmpt/core/status.h"
#include "mmpt/load/plan_stream.h"

namespace mmpt::app {

struct LoadBenchmarkOptions {
  std::string dataset;           // a prepared dataset directory
  load::PlanStreamConfig plans;  // layout (dp = ranks), seed, presets
  uint32_t threads = 2;          // loader threads = baseline worker processes
  uint32_t prefetch_micro_steps = 4;
  uint32_t compare_micro_steps = 48;  // micro-steps both loaders run for the ratio
  double long_run_seconds = 60;       // the loader alone afterwards, RSS sampled
  std::string python = "/usr/bin/python3";
  std::string baseline_script;         // bench/python_loader_baseline.py; empty: no baseline
  comm::Communicator* comm = nullptr;  // every rank loads its DP share; plans checked to agree
};

/// Throughput of one loader over the compared micro-steps.
struct LoaderRun {
  uint64_t micro_steps = 0;
  uint64_t images = 0;
  uint64_t tokens = 0;
  double seconds = 0;
  uint64_t peak_rss_bytes = 0;
  double batches_per_second() const { return seconds > 0 ? micro_steps / seconds : 0; }
  double images_per_second() const { return seconds > 0 ? images / seconds : 0; }
};

struct LoadBenchmarkResult {
  uint32_t rank = 0, ranks = 1, threads = 0;
  LoaderRun baseline;  // micro_steps == 0 when not run
  LoaderRun mmpt;
  // The long run (mmpt alone).
  uint64_t long_micro_steps = 0;
  double long_seconds = 0;
  uint64_t rss_peak_bytes = 0;    // VmHWM of the process at the end
  uint64_t rss_steady_bytes = 0;  // median RSS over the second half of the run
  int64_t rss_growth_bytes = 0;   // mean RSS of the last quarter − of the second quarter
  uint64_t rss_samples = 0;
};

/// Run the benchmark on this rank: with options.comm, rank r loads DP rank r's share (dp is
/// raised to the number of ranks) and every step's plan is checked to agree across ranks.
/// Errors: those of the dataset, planner and loader; Internal when the baseline process fails
/// (with its output).
Result<LoadBenchmarkResult> RunLoadBenchmark(const LoadBenchmarkOptions& options);

/// The figures as a table with baseline, mmpt and the ratio side by side.
std::string FormatLoadBenchmark(const LoadBenchmarkResult& result);

/// This process's resident set size and its peak so far (VmRSS, VmHWM), in bytes.
struct ResidentMemory {
  uint64_t rss_bytes = 0;
  uint64_t peak_bytes = 0;
};
ResidentMemory ReadResidentMemory();

}  // namespace mmpt::app
