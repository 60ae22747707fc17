#pragma once

// Read a shard's canonical JSON lines (what AppendSampleJson writes) into SampleViews, in place
// and strictly: the one reader of stored samples (Dataset::ReadSample, verify).

#include <span>
#include <string_view>

#include "mmpt/core/status.h"
#include "mmpt/store/meta.h"
#include "mmpt/store/sample_view.h"

namespace mmpt::store {

/// Read `line` (one canonical record, without its '\n') into `out`, replacing its contents
/// and reusing its capacity. `out`'s strings point into `line`, or into `out` itself for
/// strings spelled with escapes (see SampleView for how long they stay valid). Nothing past
/// the end of `line` is read. Thread safety: reentrant (no shared state).
///
/// Accepted: exactly the layout AppendSampleJson writes — its fields in its order, no
/// whitespace, optional fields ("role", "tokens", "path", "entry", "width" with "height",
/// "frames") present or not. This is a scanner for that one layout, not a JSON parser (input
/// records, in any JSON, go through RecordParser and simdjson): matching the layout literal
/// by literal, with SIMD only to find each string's end and to check UTF-8 (simdjson's
/// validator), reads samples about twice as fast as simdjson On-Demand's walk of the same
/// lines did (docs/benchmarks.md, "Dataset store").
/// Errors: Corrupt, for anything else: a line that leaves the layout (the message names what
/// was expected, the column and what is there), invalid UTF-8 or escapes (unpaired surrogates
/// included), a raw control character in a string, a number that is not a plain integer in
/// range (sizes in [1, kMaxImageSide]; frames, durations and rates at least 1), a media kind
/// other than image, video or audio, bytes after the record, or a sample ValidateSample
/// rejects. The message does not name the file and line; the caller
/// adds them.
Status ReadSampleLine(std::string_view line, SampleView& out);

/// Check a sample read from a shard line against the shard's `.meta` record of it (`meta` and
/// its `media`): the counts of segments and media items, media in segment order, and each
/// item's kind, width, height, duration and rates. Errors: Corrupt naming the first disagreement
/// (no file or line: the caller adds them).
Status CheckSampleAgainstMeta(const SampleView& sample, const SampleMeta& meta,
                              std::span<const MediaMeta> media);

}  // namespace mmpt::store
