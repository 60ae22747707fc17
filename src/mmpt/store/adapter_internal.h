#pragma once

// Shared helpers of the input adapters (adapter*.cc); not part of the public API.

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>

#include "mmpt/core/status.h"
#include "mmpt/store/sample.h"

namespace mmpt::store::internal {

using simdjson::dom::element;
using simdjson::dom::object;

/// The string field `key` of `obj`, nullopt if absent or null; InvalidArgument if another type.
Result<std::optional<std::string_view>> OptionalString(const object& obj, std::string_view key);

/// The array field `key` of `obj`; InvalidArgument if absent or not an array.
Result<simdjson::dom::array> RequiredArray(const object& obj, std::string_view key);

/// Parse a media item: a path string, or an object with a path and/or width/height.
/// Errors: InvalidArgument for other types, zero or absurd sizes, or neither path nor size.
Result<MediaRef> ParseMediaRef(const element& value);

/// Add `text` to `sample` as a text segment of `role`, splitting it at each `marker` (when not
/// empty) into text and media segments that take the next of `media` in order, starting at
/// `*next_media`. Empty text pieces are dropped. Errors: InvalidArgument when a marker has no
/// media item left.
Status AppendTextWithMarkers(std::string_view text, std::string_view role,
                             std::string_view marker, const std::vector<MediaRef>& media,
                             size_t* next_media, Sample& sample);

/// Append a media segment for `media` to `sample`.
void AppendMedia(MediaRef media, std::string_view role, Sample& sample);

/// Append a document's `text` (no role) to `sample`: joined to a text segment just before it
/// with `separator` between (the document's text reads as one string: mmc4's sentences with a
/// space, OBELICS's paragraphs with a blank line), else as a new segment. Empty text is dropped.
void AppendDocumentText(std::string_view text, std::string_view separator, Sample& sample);

Status ParseCanonical(const object& obj, Sample& sample);
Status ParseLlava(const object& obj, Sample& sample);
Status ParseChat(const object& obj, Sample& sample);
Status ParseMmc4(const object& obj, Sample& sample);
Status ParseObelics(const object& obj, Sample& sample);

}  // namespace mmpt::store::internal
