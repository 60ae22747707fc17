#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::cost {

/// Width and height of one image in pixels.
struct ImageSize {
  uint32_t width = 0;
  uint32_t height = 0;
};

/// A video as the planner sees it: what its token count and encoder cost depend on
/// (media::SampleVideo's inputs) and where it sits in its sample's text.
struct VideoItem {
  uint32_t width = 0;  // frame size in pixels, as displayed
  uint32_t height = 0;
  uint32_t frames = 0;         // frames in the video
  uint32_t fps_milli = 0;      // average frame rate × 1000
  uint32_t text_position = 0;  // text tokens of its sample before it
  /// A video written as timestamped temporal groups (store::MediaMeta::groups) is one item per
  /// group, each `temporal_patch` sampled frames: this one's group, of `groups` (0: the whole
  /// video is one item).
  uint16_t group = 0;
  uint16_t groups = 0;
  /// Its record among its sample's media records (store::MediaMeta order): orders the items at
  /// one text position (a video's groups and its sound track's parts, interleaved).
  uint16_t record = 0;
};

/// An audio clip as the planner sees it: its length and where it sits in its sample's text.
struct AudioItem {
  /// Mono samples at media::kAudioEncoderSampleRate (store::MediaMeta::frames): the decoded
  /// length the features, the tokens and the loader follow.
  uint32_t samples = 0;
  uint32_t sample_rate_hz = 0;  // the source's, as recorded; informational
  uint32_t text_position = 0;   // text tokens of its sample before it
  uint16_t record = 0;          // as VideoItem::record
  /// A sound track's part (store::kMediaSoundTrack): the track's samples before it (the
  /// parts before it), its tokens and frames the track's up to its end less those up to its
  /// start (CostModel::Audio); 0 for a clip of its own.
  uint32_t track_offset = 0;
  /// A sound track's part the audio encoder takes with the item before it, as one clip
  /// (store::MediaMeta::joins_previous_part).
  bool joins_previous = false;
};

/// The video and audio items of one sample, for SampleTableBuilder::Add.
struct AvItems {
  std::span<const VideoItem> videos;
  std::span<const AudioItem> audios;
};

/// The planner's input: every sample's planning facts, as a compact struct of arrays. Samples
/// are grouped by source (source s owns rows [source_begin[s], source_begin[s+1])), so a
/// sample is named by (source, index within source) and found by row = begin + index.
/// Both input paths fill it: metadata-only JSONL and a prepared dataset's `.meta` tables.
/// Memory: 12 bytes per sample for the text and image ranges, 12 bytes per image; a table with
/// videos (audio) adds 8 bytes per sample for their range and 24 (12) bytes per video (audio
/// clip). A table without them keeps video_begin (audio_begin) empty.
struct SampleTable {
  std::vector<std::string> source_names;  // one per source
  std::vector<uint64_t> source_begin;     // sources + 1 row offsets
  std::vector<uint32_t> text_tokens;      // per sample: text tokens (template included)
  std::vector<uint64_t> image_begin;      // samples + 1: images of row r are [image_begin[r], +1)
  std::vector<ImageSize> images;          // per image, sample by sample
  /// Per image: the text tokens of its sample that precede it (non-decreasing within a sample,
  /// at most the sample's text tokens). With the image tokens before it, the image's exact
  /// token position in the sample.
  std::vector<uint32_t> image_text_positions;
  /// samples + 1 when the table has videos, else empty: videos of row r are
  /// videos[video_begin[r], video_begin[r + 1]).
  std::vector<uint64_t> video_begin;
  std::vector<VideoItem> videos;
  std::vector<uint64_t> audio_begin;  // as video_begin, for audios
  std::vector<AudioItem> audios;

  size_t num_samples() const { return text_tokens.size(); }
  size_t num_sources() const { return source_names.size(); }
  size_t num_images() const { return images.size(); }
  size_t num_videos() const { return videos.size(); }
  size_t num_audios() const { return audios.size(); }
  uint64_t source_size(size_t s) const { return source_begin[s + 1] - source_begin[s]; }
  /// The source a row belongs to (binary search over source_begin).
  uint32_t SourceOfRow(uint64_t row) const;
  std::span<const ImageSize> ImagesOf(uint64_t row) const {
    return std::span<const ImageSize>(images).subspan(image_begin[row],
                                                      image_begin[row + 1] - image_begin[row]);
  }
  std::span<const VideoItem> VideosOf(uint64_t row) const {
    if (video_begin.empty()) return {};
    return std::span<const VideoItem>(videos).subspan(video_begin[row],
                                                      video_begin[row + 1] - video_begin[row]);
  }
  std::span<const AudioItem> AudiosOf(uint64_t row) const {
    if (audio_begin.empty()) return {};
    return std::span<const AudioItem>(audios).subspan(audio_begin[row],
                                                      audio_begin[row + 1] - audio_begin[row]);
  }
};

/// The text position of image `i` of `count` images in a sample of `text_tokens` text tokens
/// when the input does not say where its images sit: spread evenly, `count` + 1 gaps of
/// ⌊text_tokens / (count + 1)⌋ tokens (the last gap takes the remainder), so a caption pair's
/// image sits mid-sample and an interleaved document's images are spaced like paragraphs.
uint32_t SpreadTextPosition(uint32_t text_tokens, size_t i, size_t count);

/// Where each image of a sample starts in its token sequence when its `text_tokens` text tokens
/// are spread around them (SpreadTextPosition): image i's text position plus the tokens of the
/// images before it. `image_tokens`: each image's LLM tokens, in order. The one rule behind
/// every placement of images the metadata gives no positions for.
std::vector<uint32_t> SpreadImageStarts(uint32_t text_tokens,
                                        std::span<const uint32_t> image_tokens);

/// Build a SampleTable from samples given in any source order.
/// Not thread-safe.
class SampleTableBuilder {
 public:
  /// Register a source and return its id (ids count up from 0 in registration order).
  uint32_t AddSource(std::string name);
  /// Add one sample of `source`: its text tokens, its images in token order and the text tokens
  /// before each (`text_positions`, one per image; empty: SpreadTextPosition), and its videos
  /// and audio clips in token order (each with its text position). Errors: InvalidArgument for
  /// an unknown source, a sample with no tokens and no media (zero length), an image or video
  /// with a zero side, a video with no frames or no frame rate, an audio clip of zero length,
  /// or text positions that are not one per image, non-decreasing (within a kind) and at most
  /// text_tokens; the caller adds the file and line.
  Status Add(uint32_t source, uint32_t text_tokens, std::span<const ImageSize> images,
             std::span<const uint32_t> text_positions = {}, AvItems av = {});
  /// Group the samples by source (stable within a source) and return the table.
  /// Errors: InvalidArgument if there are no samples at all.
  Result<SampleTable> Finish() &&;

 private:
  std::vector<std::string> names_;
  std::vector<uint32_t> source_;
  std::vector<uint32_t> text_tokens_;
  std::vector<uint64_t> image_begin_{0};
  std::vector<ImageSize> images_;
  std::vector<uint32_t> positions_;
  std::vector<uint64_t> video_begin_{0};
  std::vector<VideoItem> videos_;
  std::vector<uint64_t> audio_begin_{0};
  std::vector<AudioItem> audios_;
};

}  // namespace mmpt::cost
