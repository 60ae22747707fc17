#pragma once

#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cost/sample_table.h"

namespace mmpt::plan {

/// Read metadata-only JSONL into the planner's table: one sample per line, no pixels needed,
/// so "what would my cluster do" can be asked before media are downloaded. A line is an object:
///
///   {"source": "coco", "text_tokens": 14, "images": [{"width": 640, "height": 480}]}
///
/// - `source` (string, optional): the source name; default: the file's name without extension.
/// - `text_tokens` (integer) — or `text` (string, its tokens estimated by
///   cost::EstimateTextTokens); one of the two is required.
/// - `images` (array of {width, height}) or `image_sizes` (array of [width, height]); optional.
/// - `template_tokens` (integer, optional): added to the text tokens (chat template overhead).
/// Blank lines are skipped. Errors: NotFound/IOError for a file, Corrupt naming file:line and
/// the field for a malformed line, InvalidArgument for a zero-length sample or a zero-sized
/// image (file:line), or when the files hold no sample.
Result<cost::SampleTable> ReadMetadataJsonl(const std::vector<std::string>& paths);

/// Read a prepared dataset's `.meta` tables (DATASET/<source>/<n>.meta, see store/meta.h)
/// into the planner's table, without parsing any JSON: sources are the sub-directories holding
/// `.meta` files (sorted by name), shards are taken in numeric order of <n>.
/// Errors: NotFound (no such directory, or no `.meta` inside), Corrupt (a bad table, naming the
/// file), InvalidArgument (a zero-length sample, naming the file and record).
Result<cost::SampleTable> ReadPreparedDataset(const std::string& dataset_dir);

/// Read either input by what `path` is: a directory is a prepared dataset, anything else a
/// metadata JSONL file.
Result<cost::SampleTable> ReadCorpus(const std::string& path);

}  // namespace mmpt::plan
