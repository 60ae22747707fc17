#pragma once

// Shared helpers of the input adapters (adapter*.cc); not part of the public API.

#include <simdjson.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/sample.h"

namespace mmpt::ingest::internal {

using simdjson::dom::element;
using simdjson::dom::object;

/// The string field `key` of `obj`, nullopt if absent or null; InvalidArgument if another type.
Result<std::optional<std::string_view>> OptionalString(const object& obj, std::string_view key);

/// The array field `key` of `obj`; InvalidArgument if absent or not an array.
Result<simdjson::dom::array> RequiredArray(const object& obj, std::string_view key);

/// Parse a media item: a path string, or an object with a path and/or the facts planning needs.
/// The item is of `kind` unless the object names another ("kind" or "type": "image", "video"
/// or "audio"; or its path under "video" or "audio"). Objects may give "width", "height",
/// "frames", "duration" (seconds) and "fps" (numbers) or "duration_ms" and "fps_milli", and
/// "sample_rate" or "sample_rate_hz" (Hz); a metadata-only (no path) image needs a size, a
/// video a size, duration and fps (its frames follow from them), an audio item a duration (its
/// "frames", samples at 16 kHz, follow from it unless given).
/// Errors: InvalidArgument for other types, zero or absurd values, fields another kind owns,
/// or neither a path nor the facts.
Result<store::MediaRef> ParseMediaRef(const element& value,
                                      store::MediaKind kind = store::MediaKind::kImage);

/// The clip of a video an object gives, "video_start" and "video_end" in seconds (as
/// qwen-vl-utils takes them) or "start_ms" and "end_ms", into `media` (ValidateSample checks
/// that it is a video's and ends after it starts). Errors: InvalidArgument for a negative or
/// non-numeric bound.
Status ParseVideoClip(const simdjson::dom::object& obj, store::MediaRef& media);

/// One kind of media a conversation record gives at its top level, with the marker that
/// places each item in the text ("<image>"), and how many are placed so far.
struct MarkedMedia {
  store::MediaKind kind = store::MediaKind::kImage;
  std::string_view marker;
  std::vector<store::MediaRef> items;
  size_t next = 0;
};

/// Add `text` to `sample` as text segments of `role`, splitting it at each marker of
/// `marked` into text and media segments; a marker takes the next item of its kind. Empty
/// text pieces are dropped. Errors: InvalidArgument when a marker has no item left.
Status AppendTextWithMarkers(std::string_view text, std::string_view role,
                             std::span<MarkedMedia> marked, store::Sample& sample);

/// Append a media segment for `media` to `sample`.
void AppendMedia(store::MediaRef media, std::string_view role, store::Sample& sample);

/// Append a document's `text` (no role) to `sample`: joined to a text segment just before it
/// with `separator` between (the document's text reads as one string: mmc4's sentences with a
/// space, OBELICS's paragraphs with a blank line), else as a new segment. Empty text is dropped.
void AppendDocumentText(std::string_view text, std::string_view separator, store::Sample& sample);

Status ParseCanonical(const object& obj, store::Sample& sample);
Status ParseLlava(const object& obj, store::Sample& sample);
Status ParseChat(const object& obj, store::Sample& sample);
Status ParseMmc4(const object& obj, store::Sample& sample);
Status ParseObelics(const object& obj, store::Sample& sample);

}  // namespace mmpt::ingest::internal
