#pragma once

// The `.jsonl.idx` offset index, in Megatron-Energon's layout: the uint64 little-endian start
// offset of every line of the `.jsonl`, then the file's size (N+1 values for N lines).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/status.h"

namespace mmpt::store {

/// Compute the index of `text`: the start offset of every non-empty line, then text.size().
/// A last line without '\n' counts; a line holding only "\n" or "\r\n" starts no record, as in
/// Energon's preparer (its bytes belong to the record before it).
std::vector<uint64_t> BuildLineIndex(std::string_view text);

/// Serialize an index as its little-endian bytes.
std::string EncodeLineIndex(std::span<const uint64_t> offsets);

/// A read-only `.jsonl.idx` checked against its `.jsonl`. Thread safety: immutable after Open.
class LineIndex {
 public:
  LineIndex() = default;

  /// Check `index_bytes` (named `name` in errors) against a `.jsonl` of `jsonl_size` bytes:
  /// a whole number of uint64 values, at least one, starting at 0, strictly increasing, the
  /// last equal to `jsonl_size`. The view keeps pointing into `index_bytes`.
  /// Errors: Corrupt naming `name` and the first bad entry.
  static Result<LineIndex> FromBytes(std::span<const std::byte> index_bytes, uint64_t jsonl_size,
                                     std::string_view name);

  /// Number of lines (records).
  size_t size() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }
  /// Start offset of line `i` and its length including the line end; `i` < size() (unchecked).
  uint64_t begin(size_t i) const { return offsets_[i]; }
  uint64_t length(size_t i) const { return offsets_[i + 1] - offsets_[i]; }

 private:
  std::span<const uint64_t> offsets_;
};

/// Line `i` of `text` per `index`, without its trailing line end; `i` < index.size().
std::string_view LineAt(std::string_view text, const LineIndex& index, size_t i);

}  // namespace mmpt::store
