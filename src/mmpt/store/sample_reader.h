#pragma once

// Read a shard's canonical JSON lines (what AppendSampleJson writes) into SampleViews, in place
// and strictly: the one reader of stored samples (Dataset::ReadSample, verify).

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "mmpt/core/status.h"
#include "mmpt/store/meta.h"
#include "mmpt/store/sample_view.h"

namespace mmpt::store {

/// Bytes past the end of a line that SampleReader::Read reads (but never interprets) when it
/// parses the line where it lies; simdjson's SIMDJSON_PADDING.
inline constexpr size_t kSampleReadPadding = 64;

/// Parse canonical shard lines. One reader per thread: it owns the parser's buffers, reused
/// across lines. Thread safety: none (use a thread_local reader).
class SampleReader {
 public:
  SampleReader();
  ~SampleReader();
  SampleReader(const SampleReader&) = delete;
  SampleReader& operator=(const SampleReader&) = delete;

  /// Read `line` (one canonical record, without its '\n') into `out`, replacing its contents
  /// and reusing its capacity. `readable_after` is how many bytes after the end of `line` the
  /// caller's buffer still holds (for a mapped `.jsonl`: the rest of the file): with at least
  /// kSampleReadPadding the line is parsed where it lies, otherwise it is first copied into a
  /// padded buffer. Either way `out`'s strings point into `line`, or into `out` itself for
  /// strings spelled with escapes (see SampleView for how long they stay valid).
  /// Accepted: exactly the fields AppendSampleJson writes ("key", "source", "segments",
  /// "media"; segments with "role", "text", "tokens" or "media"; media with "path", "entry",
  /// "width", "height", "frames"), each at most once, in any order, with JSON whitespace.
  /// Errors: Corrupt, for anything else: invalid JSON, UTF-8 or escapes, an unknown, repeated,
  /// missing or mistyped field, sizes outside [1, kMaxImageSide], frames outside [1, 65535],
  /// bytes after the record, or a sample ValidateSample rejects. The message names the field
  /// or segment but not the file and line, which the caller adds.
  Status Read(std::string_view line, size_t readable_after, SampleView& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Check a sample read from a shard line against the shard's `.meta` record of it (`meta` and
/// its `media`): the counts of segments and media items, the sum of the text segments' token
/// counts, and each item's width and height. Errors: Corrupt naming the first disagreement
/// (no file or line: the caller adds them).
Status CheckSampleAgainstMeta(const SampleView& sample, const SampleMeta& meta,
                              std::span<const MediaMeta> media);

}  // namespace mmpt::store
