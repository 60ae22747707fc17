#pragma once

// Join independently written parts of a dataset into one manifest, without copying shards.

#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/manifest.h"

namespace mmpt::ingest {

/// Merge the parts named by `inputs` into `out_dir`/mmpt.json. Each input is a dataset
/// directory (its mmpt.json, or else every mmpt.part-*-of-*.json in it, as `prepare --part`
/// writes), or a manifest file. Shard paths are rewritten relative to `out_dir` (they may go
/// up, "../part3/coco/00007"); shards are ordered by source (first appearance), then input
/// directory, then path — so parts of one `--parts` run merge into exactly the single-process
/// dataset. Every shard file must exist with the size its manifest gives.
/// Errors: InvalidArgument (parts prepared with different tokenizers, vision presets or format
/// versions, or the same shard twice, naming the parts), NotFound/Corrupt (a part or a shard
/// file), IOError.
Result<store::Manifest> MergeDatasets(const std::string& out_dir,
                                      const std::vector<std::string>& inputs);

}  // namespace mmpt::ingest
