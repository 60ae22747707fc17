#pragma once

// The loader: executes one rank's StepPlans ahead of the trainer. Worker threads render,
// decode and assemble micro-steps in parallel; batches come out strictly in (step,
// micro-step) order through a bounded queue, errors in their place.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "mmpt/comm/communicator.h"
#include "mmpt/core/bounded_queue.h"
#include "mmpt/core/status.h"
#include "mmpt/load/assemble.h"
#include "mmpt/load/batch.h"
#include "mmpt/load/sample_source.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::load {

/// Where the loader stands: the (step, micro-step) of the next batch Next() returns. Saving it
/// and starting a loader there (with a plan function that gives the same plans) reproduces the
/// same batches.
struct LoaderPosition {
  uint64_t step = 0;
  uint32_t micro_step = 0;
  bool operator==(const LoaderPosition&) const = default;
};

/// The plan of a step, shared by the workers. Must be deterministic (the same step, the same
/// plan) and thread-safe; errors stop the loader at that step.
using PlanFunction = std::function<Result<std::shared_ptr<const plan::StepPlan>>(uint64_t step)>;

struct LoaderOptions {
  uint32_t dp_rank = 0;  // which DP rank's packs to load
  /// This rank within its CP group; cp size comes from the plan's layout.
  uint32_t cp_rank = 0;
  // The defaults of every loader (mmpt.Loader and the commands take them from here).
  uint32_t threads = 2;               // workers assembling micro-steps in parallel
  uint32_t prefetch_micro_steps = 4;  // finished micro-steps waiting for the trainer, at most
  uint64_t max_bytes = 4ull << 30;    // batches being built or waiting, at most (bytes,
                                      // estimated from the plan; a micro-step always
                                      // proceeds when nothing else is in flight)
  ErrorPolicy on_error = ErrorPolicy::kFail;
  AssembleOptions assemble;        // cp size/rank, tp, patch_dim and merge_size
                                   // are set from the plan, the above and the source
  uint64_t end_step = UINT64_MAX;  // stop before this step (exclusive)
  /// If set, Next() checks that every rank's plan of a step agrees (CheckPlanAgreement)
  /// before handing out the step's first batch. Called from Next()'s thread only.
  comm::Communicator* comm = nullptr;
};

/// Counters of a loader's work so far (for benchmarks and logs).
struct LoaderStats {
  uint64_t batches = 0;
  uint64_t samples = 0;
  uint64_t images = 0;
  uint64_t dropped = 0;
  uint64_t bytes_in_flight = 0;
  uint64_t peak_bytes_in_flight = 0;
  uint64_t peak_micro_steps_in_flight = 0;  // being built or waiting for the trainer
};

/// The prefetching pipeline of one (DP rank, CP rank). Thread safety: Next(), position() and
/// stats() may be called from one consumer thread; the destructor stops and joins the workers.
class Loader {
 public:
  /// Start loading at `start`. Errors: InvalidArgument (ranks outside the plan's layout, zero
  /// threads), and the plan function's error for the first step.
  static Result<std::unique_ptr<Loader>> Start(std::shared_ptr<const SampleSource> source,
                                               PlanFunction plans, LoaderOptions options,
                                               LoaderPosition start = {});
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// The next batch in (step, micro-step) order, waiting for it; nullptr after end_step.
  /// Errors: the batch's error (its step, micro-step and sample named); after an error every
  /// later call returns Cancelled naming it. A failed plan agreement check is an error too.
  Result<std::shared_ptr<Batch>> Next();
  /// The position of the batch the next Next() returns.
  LoaderPosition position() const { return next_; }
  LoaderStats stats() const;
  /// Micro-steps per step (the plan's gradient accumulation).
  uint32_t micro_steps_per_step() const { return ga_; }

 private:
  Loader(std::shared_ptr<const SampleSource> source, PlanFunction plans, LoaderOptions options,
         LoaderPosition start, uint32_t ga);
  void WorkerLoop();
  Result<std::shared_ptr<const plan::StepPlan>> PlanOf(uint64_t step);
  Result<Batch> Build(const plan::StepPlan& plan, uint32_t micro_step);
  uint64_t EstimateBytes(const plan::StepPlan& plan, uint32_t micro_step) const;
  LoaderPosition PositionOf(uint64_t sequence) const;

  const std::shared_ptr<const SampleSource> source_;
  const PlanFunction plans_;
  const LoaderOptions options_;
  const LoaderPosition start_;
  const uint32_t ga_;

  BoundedQueue<std::pair<uint64_t, Result<std::shared_ptr<Batch>>>> ready_;
  std::vector<std::thread> workers_;

  mutable std::mutex mu_;
  std::condition_variable turn_cv_;   // a worker waits for its turn to push
  std::condition_variable bytes_cv_;  // a worker waits for memory
  uint64_t next_sequence_ = 0;        // next micro-step a worker takes
  uint64_t pushed_ = 0;               // micro-steps pushed into ready_
  uint64_t reserved_ = 0;             // micro-steps that reserved their memory
  bool stopping_ = false;
  uint64_t bytes_in_flight_ = 0;
  std::map<uint64_t, uint64_t> bytes_of_;  // sequence -> reserved bytes
  std::map<uint64_t, std::shared_ptr<const plan::StepPlan>> plan_cache_;
  LoaderStats stats_;

  // Consumer side.
  LoaderPosition next_;
  uint64_t consumed_ = 0;
  Status failed_;
  uint64_t agreed_step_ = UINT64_MAX;
};

}  // namespace mmpt::load
