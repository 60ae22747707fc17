#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
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
  uint16_t reserved = 0;  // zero: the planning file holds items as they are in memory
};
static_assert(sizeof(VideoItem) == 28 && std::has_unique_object_representations_v<VideoItem>);

/// An audio clip as the planner sees it: its length and where it sits in its sample's text.
struct AudioItem {
  /// Mono samples at media::kAudioEncoderSampleRate (store::MediaMeta::frames): the decoded
  /// length the features, the tokens and the loader follow.
  uint32_t samples = 0;
  uint32_t sample_rate_hz = 0;  // the source's, as recorded; informational
  uint32_t text_position = 0;   // text tokens of its sample before it
  uint32_t record = 0;          // as VideoItem::record
  /// A sound track's part (store::kMediaSoundTrack): the track's samples before it (the
  /// parts before it), its tokens and frames the track's up to its end less those up to its
  /// start (CostModel::Audio); 0 for a clip of its own.
  uint32_t track_offset = 0;
  /// A sound track's part the audio encoder takes with the item before it, as one clip
  /// (store::MediaMeta::joins_previous_part).
  bool joins_previous = false;
  uint8_t reserved[3] = {};  // zero, as VideoItem::reserved
};
static_assert(sizeof(AudioItem) == 24 && std::has_unique_object_representations_v<AudioItem>);

/// The video and audio items of one sample, for SampleTableBuilder::Add.
struct AvItems {
  std::span<const VideoItem> videos;
  std::span<const AudioItem> audios;
};

/// One row's items, found with one lookup of its sparse kinds (SampleTable::Row): what CheckRow
/// checks and CostSample costs.
struct RowItems {
  uint64_t row = 0;
  uint32_t text_tokens = 0;
  std::span<const ImageSize> images;
  std::span<const uint32_t> image_text_positions;  // one per image
  std::span<const VideoItem> videos;
  std::span<const AudioItem> audios;
  uint64_t first_image = 0;  // the index in the table's images of images[0]
  uint64_t first_video = 0;  // likewise in its videos (meaningful when there are any)
  uint64_t first_audio = 0;
};

/// The planning file's first bytes and version (SampleTable::bytes()).
inline constexpr char kSampleTableMagic[8] = {'M', 'M', 'P', 'T', 'P', 'L', 'A', 'N'};
inline constexpr uint32_t kSampleTableVersion = 1;

/// The planner's input: every sample's planning facts, as a compact struct of arrays that is
/// one contiguous, relocatable byte image (bytes()): a table the builder made holds it in memory,
/// a prepared dataset's `mmpt.plan` file is it, mapped read-only, so the ranks of a node share
/// one copy through the page cache and a rank's private memory does not grow with the corpus
/// (store/planning_table.h). Samples are grouped by source (source s owns rows
/// [source_begin[s], source_begin[s+1])), so a sample is named by (source, index within source)
/// and found by row = begin + index.
///
/// Bytes: 4 per sample for its text tokens and 8 for its image range, 12 per image (size and
/// text position): 24 for a one-image caption. Videos and audio clips are sparse: 16 bytes per
/// sample that has them (its row and range) and 28 (24) per video (audio clip).
///
/// FromBytes checks the header and the section sizes only, so opening takes the same time for
/// any corpus; a row's own ranges and values are checked when it is read for planning
/// (CheckRow: the planner checks each sample it draws), and Validate checks every row and the
/// data checksum. Copies share the bytes. Thread safety: immutable, safe to share.
struct SampleTable {
  std::vector<std::string> source_names;  // one per source
  std::vector<uint64_t> source_begin;     // sources + 1 row offsets
  std::span<const uint32_t> text_tokens;  // per sample: text tokens (template included)
  std::span<const uint64_t> image_begin;  // samples + 1: images of row r are [image_begin[r], +1)
  std::span<const ImageSize> images;      // per image, sample by sample
  /// Per image: the text tokens of its sample that precede it (non-decreasing within a sample,
  /// at most the sample's text tokens). With the image tokens before it, the image's exact
  /// token position in the sample.
  std::span<const uint32_t> image_text_positions;
  /// The rows that have videos, ascending, and their ranges: the videos of video_rows[k] are
  /// videos[video_begin[k], video_begin[k + 1]) (video_begin has video_rows + 1 entries).
  std::span<const uint64_t> video_rows;
  std::span<const uint64_t> video_begin;
  std::span<const VideoItem> videos;
  std::span<const uint64_t> audio_rows;  // as video_rows, for audio clips
  std::span<const uint64_t> audio_begin;
  std::span<const AudioItem> audios;

  size_t num_samples() const { return text_tokens.size(); }
  size_t num_sources() const { return source_names.size(); }
  size_t num_images() const { return images.size(); }
  size_t num_videos() const { return videos.size(); }
  size_t num_audios() const { return audios.size(); }
  uint64_t source_size(size_t s) const { return source_begin[s + 1] - source_begin[s]; }
  /// The source a row belongs to (binary search over source_begin).
  uint32_t SourceOfRow(uint64_t row) const;
  std::span<const ImageSize> ImagesOf(uint64_t row) const {
    return images.subspan(image_begin[row], image_begin[row + 1] - image_begin[row]);
  }
  /// The videos of `row` (binary search over video_rows); its audio clips likewise.
  std::span<const VideoItem> VideosOf(uint64_t row) const;
  std::span<const AudioItem> AudiosOf(uint64_t row) const;

  /// The table's byte image: what store::FinishDataset writes and FromBytes reads.
  std::span<const std::byte> bytes() const { return bytes_; }
  /// XXH3-64 of the bytes after the header, as the header records it (Validate checks it).
  uint64_t data_checksum() const;
  /// Where the bytes come from, for errors: a file's path, or "(in memory)".
  const std::string& origin() const { return origin_; }

  /// A table over `bytes` (8-byte aligned, kept alive by `owner`): checks the magic, version,
  /// record sizes and that the sections fill the bytes exactly, not the rows. Errors: Corrupt
  /// naming `origin` and what is wrong (not a planning table, another version, truncated).
  static Result<SampleTable> FromBytes(std::shared_ptr<const void> owner,
                                       std::span<const std::byte> bytes, std::string origin);
  /// Row `row` (< num_samples()) checked: its ranges inside the table, its items' sizes and
  /// text positions, a non-zero length; and its items. Errors: Corrupt naming the origin, the
  /// source and the sample's index in it.
  Result<RowItems> Row(uint64_t row) const;
  /// Row(row)'s check alone.
  Status CheckRow(uint64_t row) const { return Row(row).status(); }
  /// CheckRow for every row, the sparse rows ascending, and the data checksum. Errors: Corrupt
  /// as CheckRow, or naming the checksum.
  Status Validate() const;

 private:
  std::shared_ptr<const void> owner_;  // keeps bytes_ alive: a mapping or a buffer
  std::span<const std::byte> bytes_;
  std::string origin_;
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

/// What a planning table holds: its samples and items, counted before SampleTableWriter
/// writes it.
struct TableCounts {
  uint64_t samples = 0, images = 0, video_rows = 0, videos = 0, audio_rows = 0, audios = 0;
  /// One sample of `images`, `videos` and `audios` items counted in.
  void Add(size_t images, size_t videos, size_t audios);
  bool operator==(const TableCounts&) const = default;
};

/// A planning table written straight into its file, row after row in the table's order (a
/// source's samples together, sources in id order), through a mapping of the file: what it
/// holds does not grow with the corpus (SampleTableBuilder holds every row). Its size comes
/// from `counts`, given first. The same rows give the same bytes as SampleTableBuilder's table.
/// Until Finish, the file is a temporary beside `path` (removed if the writer is dropped).
class SampleTableWriter {
 public:
  struct Written {
    uint64_t bytes = 0;     // the file's size
    uint64_t checksum = 0;  // SampleTable::data_checksum
  };
  ~SampleTableWriter();
  SampleTableWriter(SampleTableWriter&&) noexcept;
  SampleTableWriter& operator=(SampleTableWriter&&) noexcept;

  /// Errors: InvalidArgument for no samples or counts no file can hold; IOError.
  static Result<SampleTableWriter> Create(const std::string& path, std::vector<std::string> sources,
                                          const TableCounts& counts);
  /// The next row, of `source` (≥ the last row's); otherwise as SampleTableBuilder::Add.
  /// Errors: as that Add; InvalidArgument for a source out of order or more than `counts`.
  Status Add(uint32_t source, uint32_t text_tokens, std::span<const ImageSize> images,
             std::span<const uint32_t> text_positions = {}, AvItems av = {});
  /// Check that every counted row came, write the header, and move the file to `path`.
  /// Errors: InvalidArgument for fewer rows than counted; IOError.
  Result<Written> Finish() &&;

 private:
  struct File;
  SampleTableWriter();
  std::vector<std::string> names_;
  std::unique_ptr<File> file_;
};

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
