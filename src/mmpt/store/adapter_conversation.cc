// Conversation formats: LLaVA / ShareGPT and Hugging Face chat `messages`.
#include <algorithm>

#include "mmpt/store/adapter_internal.h"

namespace mmpt::store::internal {
namespace {

constexpr std::string_view kImageMarker = "<image>";

std::string_view NormalizeRole(std::string_view from) {
  if (from == "human") return "user";
  if (from == "gpt") return "assistant";
  return from;
}

// The record's top-level images: "images" (a list) or "image" (one item), in order.
Result<std::vector<MediaRef>> TopLevelImages(const object& obj) {
  std::vector<MediaRef> media;
  element value;
  if (obj.at_key("images").get(value) == simdjson::SUCCESS && !value.is_null()) {
    simdjson::dom::array list;
    if (value.get_array().get(list) != simdjson::SUCCESS) {
      return Status::InvalidArgument("field \"images\" is not an array");
    }
    for (element item : list) {
      auto parsed = ParseMediaRef(item);
      if (!parsed.ok()) return parsed.status().WithContext(fmt::format("images[{}]", media.size()));
      media.push_back(std::move(*parsed));
    }
  } else if (obj.at_key("image").get(value) == simdjson::SUCCESS && !value.is_null()) {
    auto parsed = ParseMediaRef(value);
    if (!parsed.ok()) return parsed.status().WithContext("image");
    media.push_back(std::move(*parsed));
  }
  return media;
}

// Images given but never placed by a marker go at the start of the first user turn, as LLaVA
// does; a partial placement is an error because the intended positions are unknowable.
Status PlaceUnmarkedImages(const std::vector<MediaRef>& media, size_t used, Sample& sample) {
  if (used == media.size()) return Status::OK();
  if (used > 0) {
    return Status::InvalidArgument("{} images but {} \"<image>\" markers", media.size(), used);
  }
  auto at = std::find_if(sample.segments.begin(), sample.segments.end(),
                         [](const Segment& s) { return s.role == "user"; });
  if (at == sample.segments.end()) at = sample.segments.begin();
  const Segment& turn = *at;  // there is one: an empty turn is an empty text segment
  std::vector<Segment> images(media.size());
  for (size_t k = 0; k < media.size(); ++k) {
    images[k].role = turn.role;
    images[k].turn = turn.turn;
    images[k].is_media = true;
    images[k].media_index = static_cast<uint32_t>(sample.media.size() + k);
  }
  sample.media.insert(sample.media.end(), media.begin(), media.end());
  sample.segments.insert(at, images.begin(), images.end());
  return Status::OK();
}

// Give the segments from `first` on (one turn's) its index; a turn with no content is one empty
// text segment, which the chat template renders as an empty turn.
void EndTurn(size_t first, size_t turn, std::string_view role, Sample& sample) {
  if (first == sample.segments.size()) {
    Segment empty;
    empty.role = std::string(role);
    sample.segments.push_back(std::move(empty));
  }
  for (size_t i = first; i < sample.segments.size(); ++i) {
    sample.segments[i].turn = static_cast<uint32_t>(turn);
  }
}

}  // namespace

Status ParseLlava(const object& obj, Sample& sample) {
  MMPT_ASSIGN_OR_RETURN(std::vector<MediaRef> media, TopLevelImages(obj));
  MMPT_ASSIGN_OR_RETURN(simdjson::dom::array turns, RequiredArray(obj, "conversations"));
  size_t next_media = 0;
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
    MMPT_RETURN_IF_ERROR(AppendTextWithMarkers(*value, NormalizeRole(*from), kImageMarker, media,
                                               &next_media, sample));
    EndTurn(first, index, NormalizeRole(*from), sample);
    ++index;
  }
  if (index == 0) return Status::InvalidArgument("\"conversations\" is empty");
  return PlaceUnmarkedImages(media, next_media, sample);
}

Status ParseChat(const object& obj, Sample& sample) {
  MMPT_ASSIGN_OR_RETURN(std::vector<MediaRef> media, TopLevelImages(obj));
  MMPT_ASSIGN_OR_RETURN(simdjson::dom::array messages, RequiredArray(obj, "messages"));
  size_t next_media = 0;
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
      MMPT_RETURN_IF_ERROR(
          AppendTextWithMarkers(text, *role, kImageMarker, media, &next_media, sample));
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
            return Status::InvalidArgument("messages[{}].content[{}] has no string \"text\"",
                                           index, part_index);
          }
          MMPT_RETURN_IF_ERROR(
              AppendTextWithMarkers(*part_text, *role, "", media, &next_media, sample));
        } else if (type == "image" || type == "image_url") {
          element source;
          bool inline_image = false;
          for (std::string_view key : {"image", "image_url", "path", "url"}) {
            if (part.at_key(key).get(source) == simdjson::SUCCESS && !source.is_null()) {
              inline_image = true;
              break;
            }
          }
          if (inline_image) {
            auto parsed = ParseMediaRef(source);
            if (!parsed.ok()) {
              return parsed.status().WithContext(
                  fmt::format("messages[{}].content[{}]", index, part_index));
            }
            AppendMedia(std::move(*parsed), *role, sample);
          } else {
            if (next_media >= media.size()) {
              return Status::InvalidArgument(
                  "messages[{}].content[{}]: image part but only {} images given", index,
                  part_index, media.size());
            }
            AppendMedia(media[next_media++], *role, sample);
          }
        } else {
          return Status::InvalidArgument("messages[{}].content[{}]: unsupported part type",
                                         index, part_index);
        }
        ++part_index;
      }
    } else {
      return Status::InvalidArgument("messages[{}].content is neither a string nor a list",
                                     index);
    }
    EndTurn(first, index, *role, sample);
    ++index;
  }
  if (index == 0) return Status::InvalidArgument("\"messages\" is empty");
  return PlaceUnmarkedImages(media, next_media, sample);
}

}  // namespace mmpt::store::internal
