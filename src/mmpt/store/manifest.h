#pragma once

// `mmpt.json`, the dataset's manifest: written last by prepare and merge, so a directory with
// a manifest is a complete dataset.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/media/image_decode.h"

namespace mmpt::store {

inline constexpr char kManifestName[] = "mmpt.json";
inline constexpr uint32_t kFormatVersion = 2;
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

struct Manifest : DatasetSettings {
  uint32_t format_version = kFormatVersion;
  /// The planning table (store/planning_table.h, `mmpt.plan`): its bytes and the XXH3-64 its
  /// header records of its data (cost::SampleTable::data_checksum). Absent in a dataset
  /// prepared before it existed.
  std::optional<FileChecksum> planning;
  std::vector<ShardInfo> shards;  // in global sample order

  uint64_t num_samples() const;
  /// Names of the sources in order of first appearance among the shards.
  std::vector<std::string> sources() const;
};

/// Render as JSON text (pretty-printed, stable key order).
std::string ManifestToJson(const Manifest& manifest);
/// Parse manifest text; `name` is used in errors. Errors: Corrupt naming the field at fault.
Result<Manifest> ManifestFromJson(std::string_view text, std::string_view name);

/// Read `dir`/mmpt.json. Errors: NotFound (no manifest: not a dataset, or one whose prepare
/// never finished), Corrupt.
Result<Manifest> ReadManifest(const std::string& dir);
/// Write `dir`/mmpt.json atomically.
Status WriteManifest(const std::string& dir, const Manifest& manifest);

/// Render a checksum as 16 hex digits.
std::string ChecksumHex(uint64_t xxh3);

}  // namespace mmpt::store
