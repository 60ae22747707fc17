#pragma once

// WebDataset tar shards (LAION, DataComp, COYO, Energon's own sets) as prepare's input: members
// grouped into samples by key, mapped to the canonical Sample as an image-caption pair.

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/sample.h"

namespace mmpt::ingest {

/// Whether `path` names a tar shard by its extension: ".tar", ".tar.gz" or ".tgz".
bool IsWebDatasetPath(std::string_view path);

/// The WebDataset key of a member path: the path up to the first dot of its basename
/// ("part/000123.left.jpg" → "part/000123"). A basename without a dot has no key (empty).
std::string_view WebDatasetKey(std::string_view member);

/// One regular-file member of a tar.
struct WdsMember {
  std::string name;   // the member path, as in the archive
  std::string bytes;  // empty when read without data
  std::string error;  // why the bytes were not read (above kMaxWdsMemberBytes); empty if read
};

/// One WebDataset sample: consecutive members with one key, in archive order.
struct WdsSample {
  std::string key;
  std::vector<WdsMember> members;
};

/// Largest member read into memory, in bytes; a larger one is a bad sample.
inline constexpr size_t kMaxWdsMemberBytes = size_t{256} << 20;

/// Read the samples of a tar shard held in memory (plain, or gzip-compressed: libarchive
/// detects the filter from the bytes). Members that are not regular files, or whose basename
/// has no dot (no key), are passed over. A key that comes back after another key starts a new
/// sample (WebDataset's rule; prepare reports it as a duplicate key).
/// Thread safety: one reader per thread. Memory: one sample's members at a time.
class WdsReader {
 public:
  /// Read `bytes` (which must outlive the reader); `file` names it in errors.
  /// Errors: Corrupt when the bytes do not start a tar archive, naming `file`.
  static Result<std::unique_ptr<WdsReader>> Open(std::span<const std::byte> bytes,
                                                 std::string file);
  ~WdsReader();
  WdsReader(const WdsReader&) = delete;
  WdsReader& operator=(const WdsReader&) = delete;

  /// The next sample, or nullopt at the end of the archive. With `with_data` false the members'
  /// bytes are skipped (a key scan; cheap for a plain tar, a decompression for a gzip one).
  /// Errors: Corrupt for a truncated or corrupt archive or a member path that is not UTF-8, as
  /// "file:member: ..." (or "file (after member): ..." between members).
  Result<std::optional<WdsSample>> Next(bool with_data = true);

 private:
  struct Impl;
  explicit WdsReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Map a WebDataset sample to the canonical Sample, an image-caption pair as a LLaVA caption
/// record renders: the user turn (0) holds the images, the assistant turn (1) the caption.
/// - Images: members whose last extension is jpg, jpeg, png or webp (any case; the image probe
///   checks the bytes), all of them in member order; each MediaRef's path is its member name
///   and `images[k]` receives its bytes (moved out of `sample`). A sample with no image is bad.
/// - Caption: the "txt" member (trailing newlines dropped), else the first string field of
///   "caption", "text", "txt" in the "json" member's object. A sample with neither is bad.
/// - Other members (cls, npy, ...) are ignored.
/// Errors: InvalidArgument (no image, no caption), Corrupt (json not JSON, text not UTF-8),
/// InvalidArgument also for a member that came back with `error`; every message starts
/// "file:member: ".
Result<store::Sample> WdsToSample(WdsSample& sample, std::string_view file,
                                  std::vector<std::string>* images);

/// Build a tar archive of `members` in order (gzip-compressed when `gzip`): the shards
/// `mmpt synth --format wds` writes and tests read. Errors: Internal from libarchive.
Result<std::string> WriteWebDatasetTar(std::span<const WdsMember> members, bool gzip);

}  // namespace mmpt::ingest
