#pragma once

// The planner's input table from either kind of corpus: metadata-only JSONL, read here, or a
// prepared dataset (store::OpenPlanningTable). Every caller that plans from a path the user names
// (the CLI, the simulator, the demo, benchmarks, Python) reads it through ReadPlanningTable.

#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cost/sample_table.h"

namespace mmpt::ingest {

/// Read metadata-only JSONL into the planner's table: one sample per line, no pixels needed,
/// so "what would my cluster do" can be asked before media are downloaded. A line is an object:
///
///   {"source": "coco", "text_tokens": 14, "images": [{"width": 640, "height": 480}]}
///
/// - `source` (string, optional): the source name; default: the file's name without extension.
/// - `text_tokens` (integer) — or `text` (string, its tokens estimated by
///   cost::EstimateTextTokens); one of the two is required.
/// - `images` (array of {width, height}) or `image_sizes` (array of [width, height]); optional.
///   Images are placed in the text by cost::SpreadTextPosition.
/// - `videos` (array of {"width", "height", "duration", "fps"}; optional): frame size in pixels,
///   length in seconds, average frame rate; the video has round(duration × fps) frames.
/// - `audios` (array of {"duration", "sample_rate"}; optional): length in seconds, sample rate
///   in Hz. Videos and audio clips are placed in the text like images.
/// - `template_tokens` (integer, optional): added to the text tokens (chat template overhead).
/// Blank lines are skipped. Errors: NotFound/IOError for a file, Corrupt naming file:line and
/// the field for a malformed line (a video or audio number that is not positive or is out
/// of range), InvalidArgument for a zero-length sample, a zero-sized image or a video too short
/// to hold a frame (file:line), or when the files hold no sample; InvalidArgument naming file:line,
/// the record's format and the `mmpt prepare` command for `paths` when a line is a raw record
/// prepare reads (LLaVA, chat, mmc4, OBELICS, canonical), whose exact token count only
/// prepare makes.
Result<cost::SampleTable> ReadMetadataJsonl(const std::vector<std::string>& paths);

/// Read either input by what `path` is: a directory is a prepared dataset (its mapped planning
/// table, store::OpenPlanningTable), anything else a metadata JSONL file.
Result<cost::SampleTable> ReadPlanningTable(const std::string& path);

}  // namespace mmpt::ingest
