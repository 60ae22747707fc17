#include "mmpt/ingest/adapter.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "mmpt/ingest/adapter_internal.h"
#include "mmpt/media/audio.h"

namespace mmpt::ingest {
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

Result<uint32_t> ImageSide(const object& obj, std::string_view key, store::MediaKind kind) {
  element value;
  if (obj.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) return uint32_t{0};
  uint64_t side = 0;
  if (value.get_uint64().get(side) != simdjson::SUCCESS) {
    return Status::InvalidArgument("{} \"{}\" is not a non-negative integer",
                                   store::MediaKindName(kind), key);
  }
  if (side == 0 || side > store::kMaxImageSide) {
    return Status::InvalidArgument("{} \"{}\" {} is outside [1, {}]", store::MediaKindName(kind),
                                   key, side, store::kMaxImageSide);
  }
  return static_cast<uint32_t>(side);
}

// A positive count the field `key` gives as an integer, 0 when absent.
Result<uint32_t> PositiveInteger(const object& obj, std::string_view key, store::MediaKind kind) {
  element value;
  if (obj.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) return uint32_t{0};
  uint64_t count = 0;
  if (value.get_uint64().get(count) != simdjson::SUCCESS || count == 0 || count > UINT32_MAX) {
    return Status::InvalidArgument("{} \"{}\" must be an integer in [1, {}]",
                                   store::MediaKindName(kind), key, UINT32_MAX);
  }
  return static_cast<uint32_t>(count);
}

// A positive number of seconds or frames per second, given as `key` (any JSON number) or,
// as canonical records spell it, in thousandths as `milli_key`; stored in thousandths, 0 when
// both are absent.
Result<uint32_t> Thousandths(const object& obj, std::string_view key, std::string_view milli_key,
                             store::MediaKind kind) {
  MMPT_ASSIGN_OR_RETURN(uint32_t milli, PositiveInteger(obj, milli_key, kind));
  element value;
  if (obj.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) return milli;
  double x = 0;
  if (value.get_double().get(x) != simdjson::SUCCESS || !(x * 1000 >= 0.5) ||
      !(x * 1000 < UINT32_MAX)) {
    return Status::InvalidArgument("{} \"{}\" must be a number in [0.0005, {}]",
                                   store::MediaKindName(kind), key, UINT32_MAX / 1000);
  }
  return static_cast<uint32_t>(std::llround(x * 1000));
}

// A clip's bound in milliseconds: `key` in seconds (any JSON number ≥ 0; qwen-vl-utils'
// video_start / video_end) or `milli_key` as canonical records spell it; 0 when absent.
Result<uint32_t> ClipMilliseconds(const object& obj, std::string_view key,
                                  std::string_view milli_key) {
  MMPT_ASSIGN_OR_RETURN(uint32_t milli, PositiveInteger(obj, milli_key, store::MediaKind::kVideo));
  element value;
  if (obj.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) return milli;
  double x = 0;
  if (value.get_double().get(x) != simdjson::SUCCESS || !(x >= 0) || !(x * 1000 < UINT32_MAX)) {
    return Status::InvalidArgument("video \"{}\" must be seconds in [0, {}]", key,
                                   UINT32_MAX / 1000);
  }
  return static_cast<uint32_t>(std::llround(x * 1000));
}

// The kind an object names: "kind" (canonical) or "type", or the key that holds its path
// ("video", "audio"); `fallback` when none does.
Result<store::MediaKind> KindOf(const object& obj, store::MediaKind fallback) {
  std::optional<store::MediaKind> named;
  for (std::string_view key : {"kind", "type"}) {
    MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> name, OptionalString(obj, key));
    if (!name) continue;
    MMPT_ASSIGN_OR_RETURN(named, store::ParseMediaKind(*name));
    break;
  }
  for (store::MediaKind kind : {store::MediaKind::kVideo, store::MediaKind::kAudio}) {
    element value;
    if (obj.at_key(store::MediaKindName(kind)).get(value) != simdjson::SUCCESS || value.is_null()) {
      continue;
    }
    if (named && *named != kind) {
      return Status::InvalidArgument("a media object of type \"{}\" gives a \"{}\" path",
                                     store::MediaKindName(*named), store::MediaKindName(kind));
    }
    named = kind;
  }
  return named.value_or(fallback);
}

}  // namespace

Status ParseVideoClip(const object& obj, store::MediaRef& media) {
  MMPT_ASSIGN_OR_RETURN(uint32_t start, ClipMilliseconds(obj, "video_start", "start_ms"));
  MMPT_ASSIGN_OR_RETURN(uint32_t end, ClipMilliseconds(obj, "video_end", "end_ms"));
  if (start != 0) media.start_ms = start;  // absent keeps what an inner object gave
  if (end != 0) media.end_ms = end;
  return Status::OK();
}

Result<store::MediaRef> ParseMediaRef(const element& value, store::MediaKind kind) {
  store::MediaRef media;
  media.kind = kind;
  const std::string_view noun = store::MediaKindName(kind);
  std::string_view path;
  if (value.get_string().get(path) == simdjson::SUCCESS) {
    if (path.empty()) return Status::InvalidArgument("empty {} path", noun);
    media.path = std::string(path);
    return media;
  }
  object obj;
  if (value.get_object().get(obj) != simdjson::SUCCESS) {
    return Status::InvalidArgument("{} must be a path string or an object", noun);
  }
  MMPT_ASSIGN_OR_RETURN(media.kind, KindOf(obj, kind));
  kind = media.kind;
  // {"video": {...}}: the item described under its kind's key (a document's metadata-only
  // video, as OBELICS-style corpora and `mmpt synth --metadata-only` write it).
  if (element nested; obj.at_key(store::MediaKindName(kind)).get(nested) == simdjson::SUCCESS &&
                      nested.is_object()) {
    if (obj.size() != 1) {
      return Status::InvalidArgument("a {} described by an object has no other fields", noun);
    }
    return ParseMediaRef(nested, kind);
  }
  for (std::string_view key : {"path", "file", "image", "image_name", "url", "video", "audio"}) {
    MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> found, OptionalString(obj, key));
    if (found && !found->empty()) {
      media.path = std::string(*found);
      break;
    }
  }
  MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> entry, OptionalString(obj, "entry"));
  if (entry) media.entry = std::string(*entry);
  MMPT_ASSIGN_OR_RETURN(media.width, ImageSide(obj, "width", kind));
  MMPT_ASSIGN_OR_RETURN(media.height, ImageSide(obj, "height", kind));
  MMPT_ASSIGN_OR_RETURN(uint32_t frames, PositiveInteger(obj, "frames", kind));
  MMPT_ASSIGN_OR_RETURN(media.duration_ms, Thousandths(obj, "duration", "duration_ms", kind));
  MMPT_ASSIGN_OR_RETURN(media.fps_milli, Thousandths(obj, "fps", "fps_milli", kind));
  MMPT_ASSIGN_OR_RETURN(media.sample_rate_hz, PositiveInteger(obj, "sample_rate", kind));
  if (media.sample_rate_hz == 0) {
    MMPT_ASSIGN_OR_RETURN(media.sample_rate_hz, PositiveInteger(obj, "sample_rate_hz", kind));
  }
  MMPT_RETURN_IF_ERROR(ParseVideoClip(obj, media));
  if ((media.width == 0) != (media.height == 0)) {
    return Status::InvalidArgument("{} gives only one of width and height",
                                   store::MediaKindName(kind));
  }
  const bool has_path = !media.path.empty() || !media.entry.empty();
  switch (kind) {
    case store::MediaKind::kImage:
      if (media.duration_ms != 0 || media.fps_milli != 0 || media.sample_rate_hz != 0) {
        return Status::InvalidArgument("image gives a duration, frame rate or sample rate");
      }
      if (!has_path && media.width == 0) {
        return Status::InvalidArgument("image object has neither a path nor a width and height");
      }
      break;
    case store::MediaKind::kVideo:
      if (media.sample_rate_hz != 0) return Status::InvalidArgument("video gives a sample rate");
      if (!has_path && (media.width == 0 || media.duration_ms == 0 || media.fps_milli == 0)) {
        return Status::InvalidArgument(
            "video object has neither a path nor a width, height, duration and fps");
      }
      // A metadata-only video has as many frames as its length and rate make.
      if (frames == 0 && !has_path) {
        frames = static_cast<uint32_t>(std::clamp<int64_t>(
            std::llround(static_cast<double>(media.duration_ms) * media.fps_milli / 1e6), 1,
            UINT32_MAX));
      }
      break;
    case store::MediaKind::kAudio:
      if (media.width != 0 || media.fps_milli != 0) {
        return Status::InvalidArgument("audio gives a frame size or frame rate");
      }
      if (!has_path && media.duration_ms == 0) {
        return Status::InvalidArgument("audio object has neither a path nor a duration");
      }
      // Its length in samples at 16 kHz (store::MediaMeta::frames): prepare decodes a clip with
      // bytes; a metadata-only clip without a count has as many as its duration makes.
      if (frames == 0 && !has_path) frames = media::SamplesOfDuration(media.duration_ms);
      break;
  }
  media.frames = std::max<uint32_t>(frames, 1);
  return media;
}

void AppendMedia(store::MediaRef media, std::string_view role, store::Sample& sample) {
  store::Segment segment;
  segment.role = std::string(role);
  segment.is_media = true;
  segment.media_index = static_cast<uint32_t>(sample.media.size());
  sample.media.push_back(std::move(media));
  sample.segments.push_back(std::move(segment));
}

void AppendDocumentText(std::string_view text, std::string_view separator, store::Sample& sample) {
  if (text.empty()) return;
  if (!sample.segments.empty() && !sample.segments.back().is_media) {
    std::string& last = sample.segments.back().text;
    last.append(separator);
    last.append(text);
    return;
  }
  store::Segment segment;
  segment.text = std::string(text);
  sample.segments.push_back(std::move(segment));
}

Status AppendTextWithMarkers(std::string_view text, std::string_view role,
                             std::span<MarkedMedia> marked, store::Sample& sample) {
  auto add_text = [&](std::string_view piece) {
    if (piece.empty()) return;
    store::Segment segment;
    segment.role = std::string(role);
    segment.text = std::string(piece);
    sample.segments.push_back(std::move(segment));
  };
  size_t pos = 0;
  while (true) {
    // The earliest marker of any kind from `pos` on.
    size_t hit = std::string_view::npos;
    MarkedMedia* kind = nullptr;
    for (MarkedMedia& m : marked) {
      size_t at = text.find(m.marker, pos);
      if (at < hit) {
        hit = at;
        kind = &m;
      }
    }
    if (kind == nullptr) break;
    add_text(text.substr(pos, hit - pos));
    if (kind->next >= kind->items.size()) {
      return Status::InvalidArgument("more \"{}\" markers than the {} {}s given", kind->marker,
                                     kind->items.size(), store::MediaKindName(kind->kind));
    }
    AppendMedia(kind->items[kind->next++], role, sample);
    pos = hit + kind->marker.size();
  }
  add_text(text.substr(pos));
  return Status::OK();
}

Status ParseCanonical(const object& obj, store::Sample& sample) {
  MMPT_ASSIGN_OR_RETURN(std::optional<std::string_view> source, OptionalString(obj, "source"));
  if (source) sample.source = std::string(*source);
  simdjson::dom::array media_list;
  element media_value;
  if (obj.at_key("media").get(media_value) == simdjson::SUCCESS) {
    if (media_value.get_array().get(media_list) != simdjson::SUCCESS) {
      return Status::InvalidArgument("field \"media\" is not an array");
    }
    for (element item : media_list) {
      MMPT_ASSIGN_OR_RETURN(store::MediaRef media, ParseMediaRef(item));
      sample.media.push_back(std::move(media));
    }
  }
  MMPT_ASSIGN_OR_RETURN(simdjson::dom::array segments, RequiredArray(obj, "segments"));
  for (element item : segments) {
    object seg;
    if (item.get_object().get(seg) != simdjson::SUCCESS) {
      return Status::InvalidArgument("a segment is not an object");
    }
    store::Segment segment;
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

constexpr std::array<std::string_view, 7> kFormatNames = {"auto",    "canonical", "llava", "mmc4",
                                                          "obelics", "chat",      "wds"};

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
      "unknown input format '{}' (expected auto, canonical, llava, mmc4, obelics, chat or wds)",
      name);
}

struct RecordParser::Impl {
  simdjson::dom::parser parser;
};

RecordParser::RecordParser() : impl_(std::make_unique<Impl>()) {}
RecordParser::~RecordParser() = default;

Result<store::Sample> RecordParser::Parse(std::string_view line, InputFormat format,
                                          const RecordLocation& where, InputFormat* detected) {
  auto fail = [&](const Status& status) {
    return Status(status.code(),
                  fmt::format("{}:{}: {}", where.file, where.line, status.message()));
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

  store::Sample sample;
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
  if (Status valid = store::ValidateSample(sample); !valid.ok()) return fail(valid);
  return sample;
}

}  // namespace mmpt::ingest
