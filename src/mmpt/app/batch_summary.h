#pragma once

// A few real batches, described for people: what `make demo` prints after planning.

#include <cstdint>
#include <string>

#include "mmpt/core/status.h"
#include "mmpt/load/batch.h"
#include "mmpt/load/plan_stream.h"

namespace mmpt::app {

/// One line per array of `batch`: name, shape, dtype; then samples, images, dropped samples.
std::string SummarizeBatch(const load::Batch& batch);

/// Plan `dataset` with `config`, load the first `count` micro-steps of DP rank 0 with
/// `threads` loader threads, and describe each batch with the time it took to arrive (the
/// first includes the pipeline's start). Errors: those of the dataset, planner and loader.
Result<std::string> LoadAndSummarize(const std::string& dataset,
                                     const load::PlanStreamConfig& config, uint32_t count,
                                     uint32_t threads = 2);

}  // namespace mmpt::app
