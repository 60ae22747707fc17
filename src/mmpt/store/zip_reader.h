#pragma once

// A zero-copy reader of zip archives: parses the end of central directory (zip64 included),
// the central directory and each entry's local header itself, and hands out entry data as
// spans over the bytes it was given (an mmap'd file).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/status.h"

namespace mmpt::store {

/// One entry of a zip archive, as its central directory and local header describe it.
struct ZipEntry {
  std::string_view name;  // points into the archive bytes
  uint16_t method = 0;    // 0 = STORED
  uint16_t flags = 0;     // general purpose bit flags
  uint32_t crc32 = 0;     // from the central directory
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t data_offset = 0;  // from the start of the archive to the entry's data
};

/// The entries of a zip held in memory. Every entry's local header and data range are checked
/// to lie inside the archive when it is parsed, so Data() needs no further bounds checks.
/// Thread safety: immutable after Parse/Open.
class ZipReader {
 public:
  ZipReader() = default;

  /// Parse the archive in `bytes` (kept by reference), naming it `name` in errors.
  /// Errors: Corrupt (no end record, bad signatures, ranges outside the archive, multi-disk).
  static Result<ZipReader> Parse(std::span<const std::byte> bytes, std::string name);
  /// Map `path` and parse it. Errors: NotFound, IOError, Corrupt.
  static Result<ZipReader> Open(const std::string& path);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  /// The stored bytes of entry `i` (compressed bytes if the entry is not STORED).
  std::span<const std::byte> Data(size_t i) const {
    return bytes_.subspan(entries_[i].data_offset, entries_[i].compressed_size);
  }
  /// The archive's bytes.
  std::span<const std::byte> bytes() const { return bytes_; }
  const std::string& name() const { return name_; }

 private:
  MappedFile file_;  // set by Open; Parse leaves it empty
  std::span<const std::byte> bytes_;
  std::string name_;
  std::vector<ZipEntry> entries_;
};

/// CRC-32 (the zip polynomial) of `bytes`, via zlib.
uint32_t Crc32(std::span<const std::byte> bytes);

}  // namespace mmpt::store
