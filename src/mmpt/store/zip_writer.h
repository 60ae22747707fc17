#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::store {

/// One entry to store in a zip.
struct ZipInput {
  std::string name;                 // entry name, UTF-8
  std::span<const std::byte> data;  // must stay valid until WriteStoredZip returns
};

/// Write `entries` as a zip archive at `path` through libzip: every entry STORED (media are
/// already compressed), with a fixed timestamp so equal inputs give equal bytes. Atomic: the
/// archive is built in memory, then written by WriteFileAtomic (a private temporary file beside
/// `path`, renamed into place). An empty list writes an
/// empty archive (just the end record). Errors: IOError or InvalidArgument naming `path`.
Status WriteStoredZip(const std::string& path, std::span<const ZipInput> entries);

}  // namespace mmpt::store
