#pragma once

// The canonical sample every input adapter produces and every shard line stores.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/meta.h"

namespace mmpt::store {

/// A media kind as the canonical JSON spells it: "image", "video" or "audio" ("unknown" for a
/// value outside the enum, as a damaged record may hold).
std::string_view MediaKindName(MediaKind kind);
/// Parse a media kind name. Errors: InvalidArgument naming the value.
Result<MediaKind> ParseMediaKind(std::string_view name);

/// Largest image side a record may give, in pixels: larger is "absurd", rejected by prepare's
/// adapters and by the dataset's reader alike.
inline constexpr uint32_t kMaxImageSide = 1u << 16;

/// One media item a sample refers to.
struct MediaRef {
  /// Where the input found the bytes: a path relative to the media root (or absolute). Empty
  /// for a metadata-only item, which gives its size and length instead.
  std::string path;
  /// Name of the item's entry in the shard's zip; set by prepare, empty before.
  std::string entry;
  uint32_t width = 0;   // pixels; from the input for metadata-only items, else probed; 0 for audio
  uint32_t height = 0;  // pixels; 0 for audio
  /// Frames of an animated image or a video; 1 for stills. Audio: its decoded mono samples at
  /// 16 kHz (MediaMeta::frames), set by prepare (1 before).
  uint32_t frames = 1;
  MediaKind kind = MediaKind::kImage;
  uint32_t duration_ms = 0;     // video and audio: length in milliseconds
  uint32_t fps_milli = 0;       // video: frames per second × 1000
  uint32_t sample_rate_hz = 0;  // audio: the source's samples per second (0 if not given)
  /// video: the clip to sample, qwen-vl-utils' video_start / video_end in milliseconds (0: from
  /// the start / to the end; media::VideoClip)
  uint32_t start_ms = 0;
  uint32_t end_ms = 0;

  bool metadata_only() const { return path.empty() && entry.empty(); }
  bool operator==(const MediaRef&) const = default;
};

/// One segment of an interleaved sample: text with a role, or a reference to a media item.
/// Its tokens are not stored here: they depend on the chat template the dataset renders
/// samples through (text::ChatRenderer), and .meta/.tok hold the rendered sample.
struct Segment {
  std::string role;   // "user", "assistant", "system", or "" for plain documents
  uint32_t turn = 0;  // the conversation turn it belongs to (0 for documents)
  bool is_media = false;
  std::string text;          // UTF-8, when !is_media; an empty turn is one empty text
  uint32_t media_index = 0;  // index into Sample::media, when is_media

  bool operator==(const Segment&) const = default;
};

/// A training sample: interleaved segments, the media they refer to, a key unique within its
/// source, and the source's name.
struct Sample {
  std::string key;
  std::string source;
  std::vector<Segment> segments;
  std::vector<MediaRef> media;

  bool operator==(const Sample&) const = default;
};

/// Check a sample's internal consistency: every media segment names an existing item, every
/// item is referred to exactly once, every item has a path or its planning facts (an image its
/// size, a video its size, length and frame rate, an audio item its length), and each kind has
/// only its own fields (an image no duration or rates, a video no sample rate, an audio item no
/// frame size or frame rate; width and height together).
/// Errors: InvalidArgument naming the problem.
Status ValidateSample(const Sample& sample);

/// Append `sample` as one canonical JSON line (with the trailing '\n') to `out`:
/// {"key":..,"source":..,"segments":[{"role":..,"turn":..,"text":..}|{"role":..,"turn":..,"media":i}],
///  "media":[{"path":..,"entry":..,"kind":..,"width":..,"height":..,"frames":..,
///            "duration_ms":..,"fps_milli":..,"sample_rate_hz":..}]}
/// Fields with default values are left out. Text must be valid UTF-8 (adapters guarantee it).
void AppendSampleJson(const Sample& sample, std::string& out);

/// Escape `text` as a JSON string literal (with quotes) appended to `out`.
void AppendJsonString(std::string_view text, std::string& out);

}  // namespace mmpt::store
