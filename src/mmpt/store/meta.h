#pragma once

// The `.meta` table of a shard: fixed-width little-endian records that the planner reads
// through mmap with no parsing. Layout of `<source>/<n>.meta`:
//
//   MetaHeader                      64 bytes
//   SampleMeta[num_samples]         24 bytes each, in line order of <n>.jsonl
//   MediaMeta[num_media]            56 bytes each, sample by sample, in segment order
//
// Version 2 added each media item's kind and token position (`text_position`) and the video and
// audio fields; version 1 tables are refused with the command that brings them up to date.
// Version 3 added a video's temporal groups (`group`, `groups`, in bytes version 2 kept zero), so
// version 2 tables read as they are. Version 4 records an audio clip's length as its decoded
// samples (`frames`); version 2 and 3 tables, whose audio records hold frames = 1, are read
// with each clip counted from its duration (media::SamplesOfDuration), as they were planned.
//
// Every field is little-endian; records are naturally aligned (the mmap is page-aligned and
// every record size is a multiple of 8), so accessors return references into the mapping.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/status.h"

namespace mmpt::store {

static_assert(std::endian::native == std::endian::little,
              "mmpt's on-disk records are little-endian and read in place");

inline constexpr char kMetaMagic[8] = {'M', 'M', 'P', 'T', 'M', 'E', 'T', 'A'};
inline constexpr uint32_t kMetaVersion = 4;
inline constexpr uint32_t kOldestMetaVersion = 2;  // the oldest version this build reads

/// The first 64 bytes of a `.meta` file.
struct MetaHeader {
  char magic[8];                 // kMetaMagic
  uint32_t version;              // kMetaVersion
  uint32_t header_bytes;         // sizeof(MetaHeader)
  uint32_t sample_record_bytes;  // sizeof(SampleMeta)
  uint32_t media_record_bytes;   // sizeof(MediaMeta)
  uint64_t num_samples;
  uint64_t num_media;
  uint64_t num_tokens;  // int32 token ids in the shard's `.tok` file
  uint64_t reserved[2];
};
static_assert(sizeof(MetaHeader) == 64);

/// Bits of SampleMeta::flags.
enum SampleFlags : uint16_t {
  /// At least one media item of the sample has a size but no bytes (metadata-only input).
  kSampleHasMediaWithoutData = 1u << 0,
};

/// One sample's planning facts.
struct SampleMeta {
  uint64_t token_begin;   // index of the sample's first token id in the shard's `.tok`
  uint32_t text_tokens;   // Σ tokens of the sample's text segments (no template, no media)
  uint32_t media_begin;   // index of the sample's first MediaMeta in this shard
  uint16_t num_media;     // media items of the sample (MediaMeta[media_begin, +num_media))
  uint16_t flags;         // SampleFlags
  uint32_t num_segments;  // text and media segments of the canonical sample
};
static_assert(sizeof(SampleMeta) == 24);

/// Bits of MediaMeta::flags.
enum MediaFlags : uint8_t {
  /// The item has a size from the input but no bytes in the zip (data_offset = data_size = 0).
  kMediaWithoutData = 1u << 0,
  /// The record is a part of the sound track of the video whose records surround it (audio in
  /// video: ingest::PrepareOptions::audio_in_video): an audio record sharing the video's bytes,
  /// part `group` of `groups`, each part one run of the sound track's tokens
  /// (media::AudioInVideoRuns).
  kMediaSoundTrack = 1u << 1,
  /// A sound track's part (kMediaSoundTrack, not its first) that the audio encoder takes with
  /// the part before it, as one clip: the parts of one of its attention windows (Qwen3-Omni's
  /// 8 s windows span several runs of the track's tokens; ingest::LayOutSoundTrack).
  kMediaJoinsPreviousPart = 1u << 2,
};

/// What a media item is. Each kind fills its own fields of MediaMeta and leaves the others 0.
enum class MediaKind : uint8_t {
  kImage = 0,
  kVideo = 1,
  kAudio = 2,
};

/// One media item: what it is, where it sits among its sample's tokens, its size, and where its
/// bytes sit in the shard's `.zip`. A video whose chat template writes each temporal group with
/// a timestamp (Qwen3-VL) is `groups` consecutive records, one per group, with the same video
/// fields and bytes: each group is an item of its own in the token stream. A video with its
/// sound track (kMediaSoundTrack) is its groups and its sound track's parts, interleaved in
/// token order, all with the video's bytes.
struct MediaMeta {
  uint64_t data_offset = 0;  // bytes from the start of <n>.zip to the entry's (STORED) data
  uint64_t data_size = 0;    // bytes of the entry's data
  uint32_t width = 0;        // pixels, as displayed (EXIF orientation applied); 0 for audio
  uint32_t height = 0;       // pixels, as displayed; 0 for audio
  uint32_t crc32 = 0;        // CRC-32 of the data, as in the zip entry
  /// Text tokens of the sample that precede the item. With the media tokens of the items
  /// before it, this is the item's exact token position in the rendered sample, so the plan's
  /// CP split and vision assignment are the ones the loader executes.
  uint32_t text_position = 0;
  /// 1 for still images; decoded frames of a video (of its clip, if cut). Audio: the clip's
  /// length, its mono samples at media::kAudioEncoderSampleRate (16 kHz) as DecodeAudio gives
  /// them (counted at prepare; from the duration for a metadata-only clip): the one count the
  /// plan, the loader and the token count follow. A video's sound track, as an audio record
  /// sharing the video's bytes, would carry its count the same way.
  uint32_t frames = 0;
  uint32_t duration_ms = 0;     // video and audio: length in milliseconds; 0 for images
  uint32_t fps_milli = 0;       // video: frames per second × 1000; 0 otherwise
  uint32_t sample_rate_hz = 0;  // audio: the source's samples per second; 0 otherwise
  MediaKind kind = MediaKind::kImage;
  uint8_t format = 0;    // media::ImageFormat for images
  uint8_t flags = 0;     // MediaFlags
  uint8_t reserved = 0;  // zero
  uint16_t group = 0;    // a grouped video: this record's temporal group, from 0 (a sound
                         // track's part: its part)
  uint16_t groups = 0;   // a grouped video: its groups (records); 0: not grouped (a sound
                         // track's part: its parts)

  bool sound_track() const { return (flags & kMediaSoundTrack) != 0; }
  bool joins_previous_part() const { return (flags & kMediaJoinsPreviousPart) != 0; }
  /// The record of the medium's first group: the one its bytes and sample item are counted by.
  bool first_of_medium() const { return group == 0 && !sound_track(); }
};
static_assert(sizeof(MediaMeta) == 56);

/// The index among its sample's media (Sample::media, the zip entries) of record `k` of
/// `records`, a sample's media records: grouped videos' later groups count with their first.
uint32_t MediumOfRecord(std::span<const MediaMeta> records, uint32_t k);

/// The record of `records` (a sample's) holding the bytes of record `k`'s medium: the last
/// first_of_medium() record at or before `k`.
uint32_t FirstRecordOfMedium(std::span<const MediaMeta> records, uint32_t k);

/// Serialize a `.meta` file from its records. The records must be consistent (Validate-able).
std::string EncodeMeta(std::span<const SampleMeta> samples, std::span<const MediaMeta> media,
                       uint64_t num_tokens);

/// Check that `bytes` hold a well-formed `.meta` table: magic, version, record sizes, file
/// size, and every sample's media and token ranges inside the table. `name` is used in errors.
/// Errors: Corrupt, naming `name` and the first bad record.
Status ValidateMeta(std::span<const std::byte> bytes, std::string_view name);

/// A read-only, mmap'd `.meta` table. Open validates the whole table once, so accessors do no
/// checks beyond what their comments say. Move-only. Thread safety: immutable, safe to share.
class MetaTable {
 public:
  MetaTable() = default;

  /// Map and validate `path`; a table before version 4 with audio has its media records copied
  /// and each clip's `frames` counted from its duration. Errors: NotFound, IOError, Corrupt
  /// (naming the file and record).
  static Result<MetaTable> Open(const std::string& path);

  uint64_t num_samples() const { return samples_.size(); }
  uint64_t num_media() const { return media_.size(); }
  uint64_t num_tokens() const { return num_tokens_; }

  /// Sample `i` of the shard; `i` < num_samples() (unchecked).
  const SampleMeta& sample(size_t i) const { return samples_[i]; }
  /// Media item `j` of the shard; `j` < num_media() (unchecked).
  const MediaMeta& media(size_t j) const { return media_[j]; }
  /// The media records of sample `i`, in segment order (a grouped video's groups one after
  /// another); `i` < num_samples() (unchecked).
  std::span<const MediaMeta> media_of(size_t i) const {
    const SampleMeta& s = samples_[i];
    return media_.subspan(s.media_begin, s.num_media);
  }
  std::span<const SampleMeta> samples() const { return samples_; }
  std::span<const MediaMeta> media() const { return media_; }
  const std::string& path() const { return file_.path(); }

 private:
  MappedFile file_;
  uint64_t num_tokens_ = 0;
  std::span<const SampleMeta> samples_;
  std::span<const MediaMeta> media_;
  std::vector<MediaMeta> upgraded_media_;  // media_'s records for a table before version 4
};

}  // namespace mmpt::store
