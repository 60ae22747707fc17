// Conversation formats: LLaVA / ShareGPT and Hugging Face chat `messages`.
#include <algorithm>
#include <utility>

#include "mmpt/ingest/adapter_internal.h"

namespace mmpt::ingest::internal {
namespace {

std::string_view NormalizeRole(std::string_view from) {
  if (from == "human") return "user";
  if (from == "gpt") return "assistant";
  return from;
}

// The record's top-level media of one kind: a list under the plural key ("images") or one item
// under the singular ("image"), in order.
Result<std::vector<store::MediaRef>> TopLevelMedia(const object& obj, store::MediaKind kind) {
  const std::string singular(store::MediaKindName(kind));
  const std::string plural = singular + "s";
  std::vector<store::MediaRef> media;
  element value;
  if (obj.at_key(plural).get(value) == simdjson::SUCCESS && !value.is_null()) {
    simdjson::dom::array list;
    if (value.get_array().get(list) != simdjson::SUCCESS) {
      return Status::InvalidArgument("field \"{}\" is not an array", plural);
    }
    for (element item : list) {
      auto parsed = ParseMediaRef(item, kind);
      if (!parsed.ok()) {
        return parsed.status().WithContext(fmt::format("{}[{}]", plural, media.size()));
      }
      media.push_back(std::move(*parsed));
    }
  } else if (obj.at_key(singular).get(value) == simdjson::SUCCESS && !value.is_null()) {
    auto parsed = ParseMediaRef(value, kind);
    if (!parsed.ok()) return parsed.status().WithContext(singular);
    media.push_back(std::move(*parsed));
  }
  return media;
}

// Images, videos and audio given at the top level, each with its marker ("<image>", "<video>",
// "<audio>": the placeholders of LLaVA, LLaVA-Video / ShareGPT4Video and audio conversations),
// in MediaKind order, so that marked[kind] is that kind's.
Result<std::vector<MarkedMedia>> TopLevelMarkedMedia(const object& obj) {
  std::vector<MarkedMedia> marked;
  for (auto [kind, marker] : {std::pair{store::MediaKind::kImage, std::string_view("<image>")},
                              std::pair{store::MediaKind::kVideo, std::string_view("<video>")},
                              std::pair{store::MediaKind::kAudio, std::string_view("<audio>")}}) {
    MMPT_ASSIGN_OR_RETURN(std::vector<store::MediaRef> items, TopLevelMedia(obj, kind));
    marked.push_back({kind, marker, std::move(items), 0});
  }
  return marked;
}

// Media of a kind given but never placed by a marker go at the start of the first user turn,
// as LLaVA does (images, then videos, then audio); a partial placement is an error because the
// intended positions are unknowable.
Status PlaceUnmarkedMedia(const std::vector<MarkedMedia>& marked, store::Sample& sample) {
  std::vector<store::MediaRef> unplaced;
  for (const MarkedMedia& m : marked) {
    if (m.next == m.items.size()) continue;
    if (m.next > 0) {
      return Status::InvalidArgument("{} {}s but {} \"{}\" markers", m.items.size(),
                                     store::MediaKindName(m.kind), m.next, m.marker);
    }
    unplaced.insert(unplaced.end(), m.items.begin(), m.items.end());
  }
  if (unplaced.empty()) return Status::OK();
  auto at = std::find_if(sample.segments.begin(), sample.segments.end(),
                         [](const store::Segment& s) { return s.role == "user"; });
  if (at == sample.segments.end()) at = sample.segments.begin();
  const store::Segment& turn = *at;  // there is one: an empty turn is an empty text segment
  std::vector<store::Segment> segments(unplaced.size());
  for (size_t k = 0; k < unplaced.size(); ++k) {
    segments[k].role = turn.role;
    segments[k].turn = turn.turn;
    segments[k].is_media = true;
    segments[k].media_index = static_cast<uint32_t>(sample.media.size() + k);
  }
  sample.media.insert(sample.media.end(), unplaced.begin(), unplaced.end());
  sample.segments.insert(at, segments.begin(), segments.end());
  return Status::OK();
}

// Give the segments from `first` on (one turn's) its index; a turn with no content is one empty
// text segment, which the chat template renders as an empty turn.
void EndTurn(size_t first, size_t turn, std::string_view role, store::Sample& sample) {
  if (first == sample.segments.size()) {
    store::Segment empty;
    empty.role = std::string(role);
    sample.segments.push_back(std::move(empty));
  }
  for (size_t i = first; i < sample.segments.size(); ++i) {
    sample.segments[i].turn = static_cast<uint32_t>(turn);
  }
}

}  // namespace

Status ParseLlava(const object& obj, store::Sample& sample) {
  MMPT_ASSIGN_OR_RETURN(std::vector<MarkedMedia> marked, TopLevelMarkedMedia(obj));
  MMPT_ASSIGN_OR_RETURN(simdjson::dom::array turns, RequiredArray(obj, "conversations"));
  size_t index = 0;
  for (element item : turns) {
    object turn;
    if (item.get_object().get(turn) != simdjson::SUCCESS) {
      return Status::InvalidArgument("conversations[{}] is not an object", index);
    }
    MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> from, OptionalString(turn, "from"));
    MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> value, OptionalString(turn, "value"));
    if (!from || !value) {
      return Status::InvalidArgument("conversations[{}] needs string \"from\" and \"value\"",
                                     index);
    }
    const size_t first = sample.segments.size();
    MMPT_RETURN_IF_ERROR(AppendTextWithMarkers(*value, NormalizeRole(*from), marked, sample));
    EndTurn(first, index, NormalizeRole(*from), sample);
    ++index;
  }
  if (index == 0) return Status::InvalidArgument("\"conversations\" is empty");
  return PlaceUnmarkedMedia(marked, sample);
}

Status ParseChat(const object& obj, store::Sample& sample) {
  MMPT_ASSIGN_OR_RETURN(std::vector<MarkedMedia> marked, TopLevelMarkedMedia(obj));
  MMPT_ASSIGN_OR_RETURN(simdjson::dom::array messages, RequiredArray(obj, "messages"));
  size_t index = 0;
  for (element item : messages) {
    object message;
    if (item.get_object().get(message) != simdjson::SUCCESS) {
      return Status::InvalidArgument("messages[{}] is not an object", index);
    }
    MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> role, OptionalString(message, "role"));
    if (!role) return Status::InvalidArgument("messages[{}] has no string \"role\"", index);
    element content;
    if (message.at_key("content").get(content) != simdjson::SUCCESS) {
      return Status::InvalidArgument("messages[{}] has no \"content\"", index);
    }
    const size_t first = sample.segments.size();
    std::string_view text;
    simdjson::dom::array parts;
    if (content.get_string().get(text) == simdjson::SUCCESS) {
      MMPT_RETURN_IF_ERROR(AppendTextWithMarkers(text, *role, marked, sample));
    } else if (content.get_array().get(parts) == simdjson::SUCCESS) {
      size_t part_index = 0;
      for (element part_value : parts) {
        object part;
        if (part_value.get_object().get(part) != simdjson::SUCCESS) {
          return Status::InvalidArgument("messages[{}].content[{}] is not an object", index,
                                         part_index);
        }
        MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> type, OptionalString(part, "type"));
        if (type == "text") {
          MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> part_text,
                                OptionalString(part, "text"));
          if (!part_text) {
            return Status::InvalidArgument("messages[{}].content[{}] has no string \"text\"", index,
                                           part_index);
          }
          MMPT_RETURN_IF_ERROR(AppendTextWithMarkers(*part_text, *role, {}, sample));
        } else if (type == "image" || type == "image_url" || type == "video" || type == "audio") {
          // A part of a media type gives its item inline ({"type": "video", "video": path})
          // or takes the next top-level item of its kind.
          const store::MediaKind kind = type == "video"   ? store::MediaKind::kVideo
                                        : type == "audio" ? store::MediaKind::kAudio
                                                          : store::MediaKind::kImage;
          const std::string_view kind_name = store::MediaKindName(kind);
          element source;
          bool inline_media = false;
          for (std::string_view key : {kind_name, std::string_view("image_url"),
                                       std::string_view("path"), std::string_view("url")}) {
            if (part.at_key(key).get(source) == simdjson::SUCCESS && !source.is_null()) {
              inline_media = true;
              break;
            }
          }
          if (inline_media) {
            auto parsed = ParseMediaRef(source, kind);
            if (!parsed.ok()) {
              return parsed.status().WithContext(
                  fmt::format("messages[{}].content[{}]", index, part_index));
            }
            if (Status clip = ParseVideoClip(part, *parsed); !clip.ok()) {
              return clip.WithContext(fmt::format("messages[{}].content[{}]", index, part_index));
            }
            AppendMedia(std::move(*parsed), *role, sample);
          } else {
            MarkedMedia& given = marked[static_cast<size_t>(kind)];
            if (given.next >= given.items.size()) {
              return Status::InvalidArgument(
                  "messages[{}].content[{}]: {} part but only {} {}s given", index, part_index,
                  kind_name, given.items.size(), kind_name);
            }
            AppendMedia(given.items[given.next++], *role, sample);
          }
        } else {
          return Status::InvalidArgument("messages[{}].content[{}]: unsupported part type", index,
                                         part_index);
        }
        ++part_index;
      }
    } else {
      return Status::InvalidArgument("messages[{}].content is neither a string nor a list", index);
    }
    EndTurn(first, index, *role, sample);
    ++index;
  }
  if (index == 0) return Status::InvalidArgument("\"messages\" is empty");
  return PlaceUnmarkedMedia(marked, sample);
}

}  // namespace mmpt::ingest::internal
