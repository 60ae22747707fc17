#pragma once

// `mmpt.json`, the dataset's manifest: written last by prepare and merge, so a directory with
// a manifest is a complete dataset. Its settings, sources and planning table are JSON of a size
// that does not grow with the corpus; its shards (about 500 bytes each in JSON) are a binary
// table beside it, `mmpt.shards`, which the manifest names with its size and checksum, so a
// rank that plans reads no list of 100,000 shards (format version 3). A version 2 manifest,
// its shards inline, reads as it is.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/status.h"
#include "mmpt/media/image_decode.h"

namespace mmpt::store {

inline constexpr char kManifestName[] = "mmpt.json";
inline constexpr char kShardTableName[] = "mmpt.shards";
inline constexpr uint32_t kFormatVersion = 3;
inline constexpr uint32_t kOldestFormatVersion = 2;  // the oldest version this build reads
/// The files of a shard, by the suffix after its stem ("<source>/<n>").
inline constexpr const char* kShardSuffixes[] = {".jsonl", ".jsonl.idx", ".zip", ".meta", ".tok"};

/// Size and XXH3-64 checksum of one file.
struct FileChecksum {
  uint64_t bytes = 0;
  uint64_t xxh3 = 0;
};

/// One shard: its stem (relative to the dataset directory), counts, and its files' checksums.
struct ShardInfo {
  std::string source;
  std::string stem;  // e.g. "coco/00003"; may go up ("../part1/coco/00003") after a merge
  uint64_t samples = 0;
  uint64_t media = 0;  // .meta media records (a grouped video: one per temporal group)
  uint64_t tokens = 0;
  std::map<std::string, FileChecksum> files;  // by suffix, e.g. ".zip"
};

/// What a dataset was prepared with: the settings its token counts, costs and loaded batches
/// derive from, recorded in its manifest. Parts prepared with other settings cannot be merged.
struct DatasetSettings {
  std::string tokenizer;        // path or name of the tokenizer that counted text tokens
  uint64_t tokenizer_xxh3 = 0;  // checksum of the tokenizer file (0 if unknown)
  /// The vision preset (cost::LoadVisionPreset) images were checked against; image tokens
  /// are not stored but derive from each image's width and height under it.
  std::string vision;
  /// The decode budget every image with bytes was checked against at prepare (width × height
  /// as stored); the loader decodes with it, so what prepare accepts, the loader can load.
  uint64_t max_decode_pixels = media::kDefaultMaxDecodePixels;
  /// The audio encoder preset (cost::LoadAudioPreset) audio tokens and the loader's log-mel
  /// features derive from; "" in a dataset prepared before it was recorded (the default).
  std::string audio;
  /// Each video is written with its sound track (Qwen2.5-Omni's use_audio_in_video): its
  /// tokens and the track's interleaved as the audio preset's model orders them
  /// (ingest::PrepareOptions::audio_in_video). False in a dataset prepared without it.
  bool audio_in_video = false;
  /// The chat template every sample was rendered through (text::ChatTemplate's JSON, whole:
  /// the dataset carries it, and the loader renders with exactly it).
  std::string chat_template;

  /// The same settings: every field but the tokenizer's path, which may differ between
  /// machines (its checksum is compared).
  bool SameAs(const DatasetSettings& other) const;
  /// Every setting in one line (the chat template by its checksum), for errors.
  std::string Describe() const;
};

/// One source's totals over its shards: what the manifest's JSON lists per source.
struct SourceCounts {
  std::string name;
  uint64_t shards = 0;
  uint64_t samples = 0;
  uint64_t media = 0;
  uint64_t tokens = 0;
  bool operator==(const SourceCounts&) const = default;
};

/// Each source's totals over `shards`, in order of first appearance.
std::vector<SourceCounts> CountSources(const std::vector<ShardInfo>& shards);

struct Manifest : DatasetSettings {
  uint32_t format_version = kFormatVersion;
  /// Per source, in order of first appearance: as read (a manifest read without its shards
  /// has only these), or CountSources(shards) for one made in code.
  std::vector<SourceCounts> source_counts;
  /// The planning table (store/planning_table.h, `mmpt.plan`): its bytes and the XXH3-64 its
  /// header records of its data (cost::SampleTable::data_checksum). Absent in a dataset
  /// prepared before it existed.
  std::optional<FileChecksum> planning;
  std::vector<ShardInfo> shards;  // in global sample order (empty when read without them)
  /// A manifest read from version 3 JSON: its shard table's size and checksum.
  std::optional<FileChecksum> shard_table;

  /// Samples over the shards (over source_counts when read without its shards).
  uint64_t num_samples() const;
  /// Names of the sources in order of first appearance among the shards (source_counts').
  std::vector<std::string> sources() const;
  /// source_counts when read, else CountSources(shards).
  std::vector<SourceCounts> Counts() const;
};

/// Render as JSON text (pretty-printed, stable key order): the shards inline (a part manifest of
/// a prepare over several processes, read back by merge), or, given `shard_table`, the table
/// of that size and checksum named instead (what WriteManifest writes).
std::string ManifestToJson(const Manifest& manifest,
                           std::optional<FileChecksum> shard_table = std::nullopt);
/// Parse manifest text; `name` is used in errors. A manifest that names its shard table has
/// its shard_table set and no shards (ReadManifestFile reads them). Errors: Corrupt naming the
/// field at fault.
Result<Manifest> ManifestFromJson(std::string_view text, std::string_view name);

/// The binary shard table of `manifest`'s shards (sources numbered as CountSources orders
/// them).
std::string EncodeShardTable(const Manifest& manifest);

/// A shard table read in place: each shard's source, stem and counts, with no copy per shard
/// (a reader of 2M shards holds none of them). Move-only; immutable.
class ShardTable {
 public:
  ShardTable() = default;
  /// For a manifest that lists its shards (read whole, version 2, or made in code), those
  /// shards encoded; else the table it names, `dir`/mmpt.shards, mapped and checked against the
  /// size, checksum and per-source counts the manifest records. Errors: NotFound, Corrupt naming
  /// the file and what is wrong.
  static Result<ShardTable> Open(const std::string& dir, const Manifest& manifest);
  /// `bytes` (EncodeShardTable's) checked whole, `sources` the manifest's. Errors: Corrupt
  /// naming `name` and what is wrong.
  static Result<ShardTable> FromBytes(std::string bytes, std::string_view name,
                                      const std::vector<SourceCounts>& sources);

  size_t size() const { return count_; }
  /// Shard `i`'s source (an index into the manifest's sources), stem and counts; `i` < size()
  /// (unchecked).
  uint32_t source(size_t i) const;
  std::string_view stem(size_t i) const;
  uint64_t samples(size_t i) const;
  uint64_t media(size_t i) const;
  uint64_t tokens(size_t i) const;
  /// Shard `i` whole, its source named from `sources`.
  ShardInfo Info(size_t i, const std::vector<SourceCounts>& sources) const;

 private:
  static Result<ShardTable> Check(ShardTable table, std::string_view name,
                                  const std::vector<SourceCounts>& sources);
  const std::byte* Record(size_t i) const;

  MappedFile file_;
  std::unique_ptr<std::string> owned_;
  std::span<const std::byte> bytes_;
  size_t count_ = 0;
  std::string_view stems_;
};

/// Whether a read manifest brings its shards (a loader, merge, verify) or only its settings,
/// sources and planning table (a planner: constant time for any number of shards).
enum class ShardList { kRead, kSkip };

/// Read the manifest at `path` and, when it names one, its shard table beside it (checked
/// against the size, checksum and per-source counts the manifest records). Errors: NotFound,
/// Corrupt naming the file.
Result<Manifest> ReadManifestFile(const std::string& path, ShardList shards = ShardList::kRead);
/// Read `dir`/mmpt.json (ReadManifestFile). Errors: NotFound (no manifest: not a dataset, or
/// one whose prepare never finished), Corrupt.
Result<Manifest> ReadManifest(const std::string& dir, ShardList shards = ShardList::kRead);
/// Write `dir`/mmpt.shards, then `dir`/mmpt.json naming it, each atomically. Errors:
/// InvalidArgument for a manifest of samples read without its shards; IOError.
Status WriteManifest(const std::string& dir, const Manifest& manifest);

/// Render a checksum as 16 hex digits.
std::string ChecksumHex(uint64_t xxh3);

}  // namespace mmpt::store
