#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "mmpt/core/status.h"

namespace mmpt {

/// Map a whole file read-only into memory. Move-only; unmaps on destruction.
/// Thread safety: the mapping is immutable, so concurrent reads are safe.
class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// Open and map `path`. Errors: NotFound (no such file), IOError (any other failure).
  /// An empty file maps to an empty span.
  static Result<MappedFile> Open(const std::string& path);

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  std::string_view text() const { return {reinterpret_cast<const char*>(data_), size_}; }
  size_t size_bytes() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

/// Read a whole file into a string (for small files such as configs and manifests).
Result<std::string> ReadFileToString(const std::string& path);

/// Write `contents` to `path` atomically: a temporary file of its own beside it (a unique name),
/// fsync, then rename, so readers see either the old file or the whole new one, and concurrent
/// writers of one path each put a whole file in place.
Status WriteFileAtomic(const std::string& path, std::string_view contents);

}  // namespace mmpt
