#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/manifest.h"
#include "mmpt/store/meta.h"
#include "mmpt/store/sample.h"

namespace mmpt::store {

/// The bytes of one media item handed to a ShardWriter.
struct MediaBlob {
  std::string bytes;   // empty for a metadata-only item
  uint8_t format = 0;  // media::ImageFormat
};

/// A video written with its sound track (audio in video, MediaMeta::kMediaSoundTrack): its
/// records in token order.
struct SoundTrackLayout {
  /// Per record: 0 for the video's next temporal group, else the next part of the track, its
  /// decoded samples (MediaMeta::frames). Empty: the medium has no sound track written.
  std::vector<uint32_t> part_samples;
  /// Per record, or empty for none: 1 for a part the audio encoder takes with the part before
  /// it (MediaMeta::kMediaJoinsPreviousPart).
  std::vector<uint8_t> joins_previous;
  uint32_t sample_rate_hz = 0;  // the track's source rate
  uint32_t duration_ms = 0;     // the track's decoded length

  uint32_t records() const { return static_cast<uint32_t>(part_samples.size()); }
};

/// Collect one shard's samples in memory, then write its five files (`.jsonl`, `.jsonl.idx`,
/// `.zip`, `.meta`, `.tok`) under the dataset directory. Each file is written atomically; the
/// shard becomes part of a dataset only once a manifest lists it. Memory: holds the shard's
/// media bytes until Finish. Thread safety: one writer per thread; writers of different shards
/// may run concurrently.
class ShardWriter {
 public:
  /// A shard at `dataset_dir`/`stem` (e.g. "coco/00003") of `source`.
  ShardWriter(std::string dataset_dir, std::string stem, std::string source);

  /// Add `sample`, whose `media[k]` has bytes `blobs[k]`, rendered (text::ChatRenderer) into
  /// the text ids `tokens` with its media items' pads going after `media_positions[i]` of them
  /// (in segment order). `video_groups`, when given, has per media segment its temporal groups
  /// (a video under a timestamped template, text::RenderedText::media_items) or 0: such a video
  /// has one position and one `.meta` record per group. `sound_tracks`, when given, has per
  /// media segment a video's layout with its sound track (its records, each with a position)
  /// or an empty one. Sets each medium's zip entry name.
  /// Errors: InvalidArgument if the counts disagree.
  Status Add(Sample sample, std::vector<MediaBlob> blobs, std::span<const int32_t> tokens,
             std::span<const uint32_t> media_positions, std::span<const uint32_t> video_groups = {},
             std::span<const SoundTrackLayout> sound_tracks = {});

  size_t num_samples() const { return lines_offsets_.size(); }

  /// Write the files and describe them for the manifest. Errors: IOError naming the file.
  Result<ShardInfo> Finish();

 private:
  std::string dataset_dir_;
  std::string stem_;
  std::string source_;
  std::string jsonl_;
  std::vector<uint64_t> lines_offsets_;
  std::vector<int32_t> tokens_;
  std::vector<SampleMeta> samples_;
  std::vector<MediaMeta> media_;
  std::vector<std::string> entry_names_;
  std::vector<MediaBlob> blobs_;  // parallel to media_; metadata-only items and a video's later
                                  // groups have no bytes
};

/// File extension for a media::ImageFormat value ("jpg", "png", "webp", "gif", "bmp", "bin").
std::string_view MediaExtension(uint8_t format);

}  // namespace mmpt::store
