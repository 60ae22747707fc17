#pragma once

#include <string>

#include "mmpt/core/status.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/store/dataset.h"

// The planner's input table (cost::SampleTable) of a prepared dataset, read from its `.meta`
// tables through its manifest. Metadata-only JSONL, the other planning input, is ingest's
// (ingest/metadata_jsonl.h).

namespace mmpt::store {

/// The planning table of an open dataset, in its manifest's order: sources in order of first
/// appearance (Dataset::sources()), a source's samples through its shards in manifest order —
/// the numbering Dataset::GlobalIndex maps back. Reads only the mapped `.meta` tables (no JSON).
/// Files the manifest does not name are ignored, and merged datasets (shards in other
/// directories) read like any other. Errors: InvalidArgument (a zero-length sample, naming the
/// shard and record; a dataset with no samples).
Result<cost::SampleTable> PlanningTable(const Dataset& dataset);

}  // namespace mmpt::store
