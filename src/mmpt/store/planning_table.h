#pragma once

#include <string>

#include "mmpt/core/status.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/manifest.h"

// A prepared dataset's planning input: its `mmpt.plan`, the planner's table (cost::SampleTable's
// byte image) of every sample, written beside the manifest when a dataset is finished and
// mapped read-only by every rank that plans it, so a node holds one copy in its page cache and
// opening takes the same time for any corpus. Metadata-only JSONL, the other planning input, is
// ingest's (ingest/metadata_jsonl.h).

namespace mmpt::store {

inline constexpr char kPlanningTableName[] = "mmpt.plan";

/// The planning table of an open dataset built from its `.meta` tables, in its manifest's
/// order: sources in order of first appearance (Dataset::sources()), a source's samples through
/// its shards in manifest order — the numbering Dataset::GlobalIndex maps back. Files the
/// manifest does not name are ignored, and merged datasets (shards in other directories) read
/// like any other. Held in memory (what `mmpt verify` compares a dataset's `mmpt.plan` with,
/// and a dataset prepared before it had one plans from). Errors: InvalidArgument (a
/// zero-length sample, naming the shard and record; a dataset with no samples).
Result<cost::SampleTable> BuildPlanningTable(const Dataset& dataset);

/// BuildPlanningTable's table written to `dataset`'s `mmpt.plan` (atomically) as its rows are
/// read, two passes over the `.meta` tables (the first counts them, cost::SampleTableWriter):
/// memory that does not grow with the corpus. Returns its size and checksum. Errors: as
/// BuildPlanningTable's; IOError.
Result<FileChecksum> WritePlanningTableOf(const Dataset& dataset);

/// Write `table` as `dir`/mmpt.plan (atomically), record its size and checksum in `manifest`,
/// then write the manifest (atomically), last: FinishDataset's second half, and how a planning-
/// only corpus (bench/scale_bench.cc) is written. Errors: IOError.
Status WritePlanningTable(const std::string& dir, const cost::SampleTable& table,
                          Manifest manifest);

/// Finish the dataset in `dir` whose shards `manifest` lists: write its planning table
/// (`mmpt.plan`, atomically, WritePlanningTableOf), record the table's size and checksum in the
/// manifest, and write the manifest last (atomically): a directory whose manifest names its
/// planning table holds it whole (a dataset of no samples gets its manifest only). The one way
/// prepare, merge and `mmpt index` end. Errors: those of Dataset::Open and of reading each shard's
/// `.meta` (a shard missing or disagreeing with the manifest, naming it), WritePlanningTableOf's
/// and the writes.
Status FinishDataset(const std::string& dir, Manifest manifest);

/// The planning table of the dataset in `dir` with `manifest` (read with or without its shards,
/// ShardList): its `mmpt.plan` mapped read-only, checked in constant time against what the
/// manifest records (size, checksum, sources and their samples). A dataset whose manifest records
/// no planning table (prepared before it existed) is read as it is: the table is built in this
/// process's memory from its
/// `.meta` tables, and a warning names `mmpt index DIR`, which writes it once. Errors:
/// NotFound, IOError; Corrupt naming `mmpt.plan` and what differs; BuildPlanningTable's.
Result<cost::SampleTable> OpenPlanningTable(const std::string& dir, const Manifest& manifest);

/// OpenPlanningTable of `dir`'s own manifest, read without its shards.
Result<cost::SampleTable> OpenPlanningTable(const std::string& dir);

}  // namespace mmpt::store
