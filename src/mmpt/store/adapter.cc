#include "mmpt/store/adapter.h"

#include <array>

#include "mmpt/store/adapter_internal.h"

namespace mmpt::store {
namespace internal {

Result<std::optional<std::string_view>> OptionalString(const object& obj, std::string_view key) {
  element value;
  if (obj.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) {
    return std::optional<std::string_view>();
  }
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) {
    return Status::InvalidArgument("field \"{}\" is not a string", key);
  }
  return std::optional<std::string_view>(text);
}

Result<simdjson::dom::array> RequiredArray(const object& obj, std::string_view key) {
  element value;
  if (obj.at_key(key).get(value) != simdjson::SUCCESS) {
    return Status::InvalidArgument("field \"{}\" is missing", key);
  }
  simdjson::dom::array array;
  if (value.get_array().get(array) != simdjson::SUCCESS) {
    return Status::InvalidArgument("field \"{}\" is not an array", key);
  }
  return array;
}

namespace {

Result<uint32_t> ImageSide(const object& obj, std::string_view key) {
  element value;
  if (obj.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) return uint32_t{0};
  uint64_t side = 0;
  if (value.get_uint64().get(side) != simdjson::SUCCESS) {
    return Status::InvalidArgument("image \"{}\" is not a non-negative integer", key);
  }
  if (side == 0 || side > kMaxImageSide) {
    return Status::InvalidArgument("image \"{}\" {} is outside [1, {}]", key, side,
                                   kMaxImageSide);
  }
  return static_cast<uint32_t>(side);
}

}  // namespace

Result<MediaRef> ParseMediaRef(const element& value) {
  MediaRef media;
  std::string_view path;
  if (value.get_string().get(path) == simdjson::SUCCESS) {
    if (path.empty()) return Status::InvalidArgument("empty image path");
    media.path = std::string(path);
    return media;
  }
  object obj;
  if (value.get_object().get(obj) != simdjson::SUCCESS) {
    return Status::InvalidArgument("an image must be a path string or an object");
  }
  for (std::string_view key : {"path", "file", "image", "image_name", "url"}) {
    MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> found, OptionalString(obj, key));
    if (found && !found->empty()) {
      media.path = std::string(*found);
      break;
    }
  }
  MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> entry, OptionalString(obj, "entry"));
  if (entry) media.entry = std::string(*entry);
  MMPT_ASSIGN_OR_RETURN(media.width, ImageSide(obj, "width"));
  MMPT_ASSIGN_OR_RETURN(media.height, ImageSide(obj, "height"));
  element frames;
  if (obj.at_key("frames").get(frames) == simdjson::SUCCESS) {
    uint64_t count = 0;
    if (frames.get_uint64().get(count) != simdjson::SUCCESS || count == 0 || count > 65535) {
      return Status::InvalidArgument("image \"frames\" must be an integer in [1, 65535]");
    }
    media.frames = static_cast<uint32_t>(count);
  }
  if ((media.width == 0) != (media.height == 0)) {
    return Status::InvalidArgument("image gives only one of width and height");
  }
  if (media.path.empty() && media.entry.empty() && media.width == 0) {
    return Status::InvalidArgument("image object has neither a path nor a width and height");
  }
  return media;
}

void AppendMedia(MediaRef media, std::string_view role, Sample& sample) {
  Segment segment;
  segment.role = std::string(role);
  segment.is_media = true;
  segment.media_index = static_cast<uint32_t>(sample.media.size());
  sample.media.push_back(std::move(media));
  sample.segments.push_back(std::move(segment));
}

void AppendDocumentText(std::string_view text, std::string_view separator, Sample& sample) {
  if (text.empty()) return;
  if (!sample.segments.empty() && !sample.segments.back().is_media) {
    std::string& last = sample.segments.back().text;
    last.append(separator);
    last.append(text);
    return;
  }
  Segment segment;
  segment.text = std::string(text);
  sample.segments.push_back(std::move(segment));
}

Status AppendTextWithMarkers(std::string_view text, std::string_view role,
                             std::string_view marker, const std::vector<MediaRef>& media,
                             size_t* next_media, Sample& sample) {
  auto add_text = [&](std::string_view piece) {
    if (piece.empty()) return;
    Segment segment;
    segment.role = std::string(role);
    segment.text = std::string(piece);
    sample.segments.push_back(std::move(segment));
  };
  if (marker.empty()) {
    add_text(text);
    return Status::OK();
  }
  size_t pos = 0;
  while (true) {
    size_t hit = text.find(marker, pos);
    if (hit == std::string_view::npos) break;
    add_text(text.substr(pos, hit - pos));
    if (*next_media >= media.size()) {
      return Status::InvalidArgument("more \"{}\" markers than the {} images given", marker,
                                     media.size());
    }
    AppendMedia(media[(*next_media)++], role, sample);
    pos = hit + marker.size();
  }
  add_text(text.substr(pos));
  return Status::OK();
}

Status ParseCanonical(const object& obj, Sample& sample) {
  MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> source, OptionalString(obj, "source"));
  if (source) sample.source = std::string(*source);
  simdjson::dom::array media_list;
  element media_value;
  if (obj.at_key("media").get(media_value) == simdjson::SUCCESS) {
    if (media_value.get_array().get(media_list) != simdjson::SUCCESS) {
      return Status::InvalidArgument("field \"media\" is not an array");
    }
    for (element item : media_list) {
      MMPT_ASSIGN_OR_RETURN(MediaRef media, ParseMediaRef(item));
      sample.media.push_back(std::move(media));
    }
  }
  MMPT_ASSIGN_OR_RETURN(simdjson::dom::array segments, RequiredArray(obj, "segments"));
  for (element item : segments) {
    object seg;
    if (item.get_object().get(seg) != simdjson::SUCCESS) {
      return Status::InvalidArgument("a segment is not an object");
    }
    Segment segment;
    MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> role, OptionalString(seg, "role"));
    if (role) segment.role = std::string(*role);
    element turn;
    if (seg.at_key("turn").get(turn) == simdjson::SUCCESS) {
      uint64_t value = 0;
      if (turn.get_uint64().get(value) != simdjson::SUCCESS || value > UINT32_MAX) {
        return Status::InvalidArgument("segment {}: \"turn\" is not a turn index",
                                       sample.segments.size());
      }
      segment.turn = static_cast<uint32_t>(value);
    }
    MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> text, OptionalString(seg, "text"));
    element index;
    if (seg.at_key("media").get(index) == simdjson::SUCCESS) {
      uint64_t value = 0;
      if (text || index.get_uint64().get(value) != simdjson::SUCCESS) {
        return Status::InvalidArgument(
            "segment {}: \"media\" must be a media index, without \"text\"",
            sample.segments.size());
      }
      segment.is_media = true;
      segment.media_index = static_cast<uint32_t>(std::min<uint64_t>(value, UINT32_MAX));
    } else if (text) {
      segment.text = std::string(*text);
    } else {
      return Status::InvalidArgument("segment {} has neither \"text\" nor \"media\"",
                                     sample.segments.size());
    }
    sample.segments.push_back(std::move(segment));
  }
  return Status::OK();
}

}  // namespace internal

namespace {

constexpr std::array<std::string_view, 7> kFormatNames = {
    "auto", "canonical", "llava", "mmc4", "obelics", "chat", "wds"};

bool Has(const simdjson::dom::object& obj, std::string_view key) {
  simdjson::dom::element value;
  return obj.at_key(key).get(value) == simdjson::SUCCESS;
}

InputFormat Detect(const simdjson::dom::object& obj) {
  if (Has(obj, "segments")) return InputFormat::kCanonical;
  if (Has(obj, "conversations")) return InputFormat::kLlava;
  if (Has(obj, "text_list")) return InputFormat::kMmc4;
  if (Has(obj, "texts")) return InputFormat::kObelics;
  if (Has(obj, "messages")) return InputFormat::kChat;
  return InputFormat::kAuto;
}

}  // namespace

std::string_view InputFormatName(InputFormat format) {
  return kFormatNames[static_cast<size_t>(format)];
}

Result<InputFormat> ParseInputFormat(std::string_view name) {
  for (size_t i = 0; i < kFormatNames.size(); ++i) {
    if (kFormatNames[i] == name) return static_cast<InputFormat>(i);
  }
  return Status::InvalidArgument(
      "unknown input format '{}' (expected auto, canonical, llava, mmc4, obelics, chat or wds)", name);
}

struct RecordParser::Impl {
  simdjson::dom::parser parser;
};

RecordParser::RecordParser() : impl_(std::make_unique<Impl>()) {}
RecordParser::~RecordParser() = default;

Result<Sample> RecordParser::Parse(std::string_view line, InputFormat format,
                                   const RecordLocation& where, InputFormat* detected) {
  auto fail = [&](const Status& status) {
    return Status(status.code(), fmt::format("{}:{}: {}", where.file, where.line,
                                             status.message()));
  };
  simdjson::dom::element doc;
  if (auto error = impl_->parser.parse(line.data(), line.size(), true).get(doc)) {
    return fail(Status::Corrupt("not valid JSON: {}", simdjson::error_message(error)));
  }
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) {
    return fail(Status::InvalidArgument("the record is not a JSON object"));
  }
  if (format == InputFormat::kAuto) {
    format = Detect(obj);
    if (format == InputFormat::kAuto) {
      return fail(Status::InvalidArgument(
          "unknown record format: none of \"segments\", \"conversations\", \"text_list\", "
          "\"texts\", \"messages\""));
    }
  }
  if (detected != nullptr) *detected = format;

  Sample sample;
  for (std::string_view key : {"key", "id", "__key__", "sample_id"}) {
    simdjson::dom::element value;
    if (obj.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) continue;
    std::string_view text;
    int64_t number = 0;
    uint64_t unsigned_number = 0;
    if (value.get_string().get(text) == simdjson::SUCCESS) {
      sample.key = std::string(text);
    } else if (value.get_int64().get(number) == simdjson::SUCCESS) {
      sample.key = std::to_string(number);
    } else if (value.get_uint64().get(unsigned_number) == simdjson::SUCCESS) {
      sample.key = std::to_string(unsigned_number);
    } else {
      return fail(Status::InvalidArgument("field \"{}\" is neither a string nor an integer", key));
    }
    break;
  }
  if (sample.key.empty()) sample.key = fmt::format("{}:{}", where.file, where.line);

  Status status;
  switch (format) {
    case InputFormat::kCanonical: status = internal::ParseCanonical(obj, sample); break;
    case InputFormat::kLlava: status = internal::ParseLlava(obj, sample); break;
    case InputFormat::kMmc4: status = internal::ParseMmc4(obj, sample); break;
    case InputFormat::kObelics: status = internal::ParseObelics(obj, sample); break;
    case InputFormat::kChat: status = internal::ParseChat(obj, sample); break;
    case InputFormat::kWebDataset:
      status = Status::InvalidArgument("wds samples come from tar members, not JSON lines");
      break;
    case InputFormat::kAuto: status = Status::Internal("format not resolved"); break;
  }
  if (!status.ok()) return fail(status);
  if (Status valid = ValidateSample(sample); !valid.ok()) return fail(valid);
  return sample;
}

}  // namespace mmpt::store
