#include "mmpt/store/sample_reader.h"

#include <simdjson.h>

#include <cstring>
#include <string>
#include <utility>

#include "mmpt/store/adapter.h"

namespace mmpt::store {

static_assert(kSampleReadPadding == simdjson::SIMDJSON_PADDING);

namespace od = simdjson::ondemand;

struct SampleReader::Impl {
  od::parser parser;
  std::string padded;  // a copy of a line that lies too close to the end of its buffer
};

SampleReader::SampleReader() : impl_(std::make_unique<Impl>()) {}
SampleReader::~SampleReader() = default;

namespace {

Status NotJson(simdjson::error_code error) {
  return Status::Corrupt("not valid JSON: {}", simdjson::error_message(error));
}

// The fields of each object, as bits, to catch repeats and missing ones.
enum FieldBit : uint32_t {
  kKey = 1, kSource = 2, kSegments = 4, kMediaList = 8,                  // the record
  kRole = 1, kText = 2, kTokens = 4, kMediaIndex = 8,                    // a segment
  kPath = 1, kEntry = 2, kWidth = 4, kHeight = 8, kFrames = 16,          // a media item
};

// Reads one line; strings are mapped back from the parsed buffer to `line`.
class LineReader {
 public:
  LineReader(std::string_view line, const char* parsed, SampleView& out, std::vector<char>& arena)
      : line_(line), parsed_(parsed), out_(out), arena_(arena) {}

  Status Record(od::document& doc) {
    od::object record;
    if (auto error = doc.get_object().get(record)) return NotJson(error);
    uint32_t seen = 0;
    for (auto field_or : record) {
      od::field field;
      if (auto error = std::move(field_or).get(field)) return NotJson(error);
      od::raw_json_string name = field.key();
      od::value& value = field.value();
      if (name.unsafe_is_equal("segments")) {
        MMPT_RETURN_IF_ERROR(Once(seen, kSegments, "segments"));
        MMPT_RETURN_IF_ERROR(Segments(value));
      } else if (name.unsafe_is_equal("media")) {
        MMPT_RETURN_IF_ERROR(Once(seen, kMediaList, "media"));
        MMPT_RETURN_IF_ERROR(MediaList(value));
      } else if (name.unsafe_is_equal("key")) {
        MMPT_RETURN_IF_ERROR(Once(seen, kKey, "key"));
        MMPT_RETURN_IF_ERROR(String(value, "key", out_.key));
      } else if (name.unsafe_is_equal("source")) {
        MMPT_RETURN_IF_ERROR(Once(seen, kSource, "source"));
        MMPT_RETURN_IF_ERROR(String(value, "source", out_.source));
      } else {
        return Unknown(name, "the record");
      }
    }
    if (seen != (kKey | kSource | kSegments | kMediaList)) {
      return Status::Corrupt("the record lacks one of \"key\", \"source\", \"segments\", "
                             "\"media\"");
    }
    // Iteration stops at the record's closing brace; anything after it is damage.
    const char* rest = nullptr;
    if (doc.current_location().get(rest) == simdjson::SUCCESS) {
      return Status::Corrupt("bytes after the record at column {}", rest - parsed_ + 1);
    }
    return Status::OK();
  }

 private:
  static Status Once(uint32_t& seen, uint32_t bit, std::string_view name) {
    if (seen & bit) return Status::Corrupt("field \"{}\" is repeated", name);
    seen |= bit;
    return Status::OK();
  }

  Status Unknown(od::raw_json_string name, std::string_view where) const {
    // The key is quote-terminated within the parsed buffer; show at most 32 bytes of it.
    const char* begin = name.raw();
    const char* end = static_cast<const char*>(std::memchr(begin, '"', 33));
    size_t length = end == nullptr ? 32 : static_cast<size_t>(end - begin);
    return Status::Corrupt("{} has an unknown field \"{}\"", where,
                           std::string_view(begin, length));
  }

  // A string value without copying it when it has no escapes (the usual case: canonical lines
  // escape only quotes, backslashes and control characters).
  Status String(od::value& value, std::string_view what, std::string_view& out) {
    std::string_view token = value.raw_json_token();
    // The token runs up to the next one: drop JSON whitespace after the closing quote.
    size_t end = token.size();
    while (end > 0 && (token[end - 1] == ' ' || token[end - 1] == '\n' ||
                       token[end - 1] == '\r' || token[end - 1] == '\t')) {
      --end;
    }
    if (end < 2 || token[0] != '"' || token[end - 1] != '"') {
      return Status::Corrupt("{} is not a string", what);
    }
    std::string_view content = token.substr(1, end - 2);
    if (std::memchr(content.data(), '\\', content.size()) == nullptr) {
      od::raw_json_string consumed;
      if (auto error = value.get_raw_json_string().get(consumed)) return NotJson(error);
      out = std::string_view(line_.data() + (content.data() - parsed_), content.size());
      return Status::OK();
    }
    std::string_view unescaped;
    if (auto error = value.get_string().get(unescaped)) {
      return Status::Corrupt("{}: {}", what, simdjson::error_message(error));
    }
    // Capacity was reserved for the whole line, so this never moves earlier strings.
    char* at = arena_.data() + arena_.size();
    arena_.insert(arena_.end(), unescaped.begin(), unescaped.end());
    out = std::string_view(at, unescaped.size());
    return Status::OK();
  }

  static Status Unsigned(od::value& value, std::string_view what, uint64_t min, uint64_t max,
                         uint64_t& out) {
    if (value.get_uint64().get(out) != simdjson::SUCCESS || out < min || out > max) {
      return Status::Corrupt("{} is not an integer in [{}, {}]", what, min, max);
    }
    return Status::OK();
  }

  Status Segments(od::value& value) {
    od::array list;
    if (value.get_array().get(list) != simdjson::SUCCESS) {
      return Status::Corrupt("field \"segments\" is not an array");
    }
    for (auto item_or : list) {
      od::value item;
      if (auto error = item_or.get(item)) return NotJson(error);
      const size_t i = out_.segments.size();
      od::object fields;
      if (item.get_object().get(fields) != simdjson::SUCCESS) {
        return Status::Corrupt("segment {} is not an object", i);
      }
      SegmentView& segment = out_.segments.emplace_back();
      uint32_t seen = 0;
      for (auto field_or : fields) {
        od::field field;
        if (auto error = std::move(field_or).get(field)) return NotJson(error);
        od::raw_json_string name = field.key();
        od::value& v = field.value();
        uint64_t number = 0;
        if (name.unsafe_is_equal("text")) {
          MMPT_RETURN_IF_ERROR(Once(seen, kText, "text"));
          MMPT_RETURN_IF_ERROR(String(v, "segment text", segment.text));
        } else if (name.unsafe_is_equal("role")) {
          MMPT_RETURN_IF_ERROR(Once(seen, kRole, "role"));
          MMPT_RETURN_IF_ERROR(String(v, "segment role", segment.role));
        } else if (name.unsafe_is_equal("tokens")) {
          MMPT_RETURN_IF_ERROR(Once(seen, kTokens, "tokens"));
          MMPT_RETURN_IF_ERROR(Unsigned(v, "segment \"tokens\"", 0, INT64_MAX, number));
          segment.text_tokens = static_cast<int64_t>(number);
        } else if (name.unsafe_is_equal("media")) {
          MMPT_RETURN_IF_ERROR(Once(seen, kMediaIndex, "media"));
          MMPT_RETURN_IF_ERROR(Unsigned(v, "segment \"media\"", 0, UINT32_MAX, number));
          segment.media_index = static_cast<uint32_t>(number);
          segment.is_media = true;
        } else {
          return Unknown(name, fmt::format("segment {}", i));
        }
      }
      if ((seen & kMediaIndex) ? (seen & (kText | kTokens)) != 0 : (seen & kText) == 0) {
        return Status::Corrupt("segment {} needs \"text\" (with optional \"tokens\") or "
                               "\"media\", not both",
                               i);
      }
    }
    return Status::OK();
  }

  Status MediaList(od::value& value) {
    od::array list;
    if (value.get_array().get(list) != simdjson::SUCCESS) {
      return Status::Corrupt("field \"media\" is not an array");
    }
    for (auto item_or : list) {
      od::value item;
      if (auto error = item_or.get(item)) return NotJson(error);
      const size_t k = out_.media.size();
      od::object fields;
      if (item.get_object().get(fields) != simdjson::SUCCESS) {
        return Status::Corrupt("media {} is not an object", k);
      }
      MediaView& media = out_.media.emplace_back();
      uint32_t seen = 0;
      for (auto field_or : fields) {
        od::field field;
        if (auto error = std::move(field_or).get(field)) return NotJson(error);
        od::raw_json_string name = field.key();
        od::value& v = field.value();
        uint64_t number = 0;
        if (name.unsafe_is_equal("path")) {
          MMPT_RETURN_IF_ERROR(Once(seen, kPath, "path"));
          MMPT_RETURN_IF_ERROR(String(v, "media path", media.path));
        } else if (name.unsafe_is_equal("entry")) {
          MMPT_RETURN_IF_ERROR(Once(seen, kEntry, "entry"));
          MMPT_RETURN_IF_ERROR(String(v, "media entry", media.entry));
        } else if (name.unsafe_is_equal("width")) {
          MMPT_RETURN_IF_ERROR(Once(seen, kWidth, "width"));
          MMPT_RETURN_IF_ERROR(Unsigned(v, "media \"width\"", 1, kMaxImageSide, number));
          media.width = static_cast<uint32_t>(number);
        } else if (name.unsafe_is_equal("height")) {
          MMPT_RETURN_IF_ERROR(Once(seen, kHeight, "height"));
          MMPT_RETURN_IF_ERROR(Unsigned(v, "media \"height\"", 1, kMaxImageSide, number));
          media.height = static_cast<uint32_t>(number);
        } else if (name.unsafe_is_equal("frames")) {
          MMPT_RETURN_IF_ERROR(Once(seen, kFrames, "frames"));
          MMPT_RETURN_IF_ERROR(Unsigned(v, "media \"frames\"", 1, 65535, number));
          media.frames = static_cast<uint32_t>(number);
        } else {
          return Unknown(name, fmt::format("media {}", k));
        }
      }
      if (((seen & kWidth) == 0) != ((seen & kHeight) == 0)) {
        return Status::Corrupt("media {} gives only one of width and height", k);
      }
    }
    return Status::OK();
  }

  std::string_view line_;
  const char* parsed_;  // where simdjson reads the line: line_ itself or a padded copy
  SampleView& out_;
  std::vector<char>& arena_;
};

}  // namespace

Status SampleReader::Read(std::string_view line, size_t readable_after, SampleView& out) {
  out.key = {};
  out.source = {};
  out.segments.clear();
  out.media.clear();
  out.unescaped_.clear();
  out.unescaped_.reserve(line.size());

  const char* parsed = line.data();
  size_t capacity = line.size() + readable_after;
  if (readable_after < kSampleReadPadding) {
    impl_->padded.assign(line);
    impl_->padded.resize(line.size() + kSampleReadPadding, ' ');
    parsed = impl_->padded.data();
    capacity = impl_->padded.size();
  }
  od::document doc;
  if (auto error = impl_->parser.iterate(parsed, line.size(), capacity).get(doc)) {
    return NotJson(error);
  }
  LineReader reader(line, parsed, out, out.unescaped_);
  MMPT_RETURN_IF_ERROR(reader.Record(doc));
  if (Status valid = ValidateSample(out); !valid.ok()) {
    return Status::Corrupt("{}", valid.message());
  }
  return Status::OK();
}

Status CheckSampleAgainstMeta(const SampleView& sample, const SampleMeta& meta,
                              std::span<const MediaMeta> media) {
  uint64_t tokens = 0;
  for (const SegmentView& segment : sample.segments) {
    if (!segment.is_media) tokens += static_cast<uint64_t>(std::max<int64_t>(0, segment.text_tokens));
  }
  if (sample.segments.size() != meta.num_segments || sample.media.size() != media.size() ||
      tokens != meta.text_tokens) {
    return Status::Corrupt("{} segments, {} media and {} tokens where .meta says {}, {} and {}",
                           sample.segments.size(), sample.media.size(), tokens,
                           meta.num_segments, media.size(), meta.text_tokens);
  }
  for (size_t k = 0; k < media.size(); ++k) {
    if (media[k].width != sample.media[k].width || media[k].height != sample.media[k].height) {
      return Status::Corrupt("media {} is {}x{} where .meta says {}x{}", k, sample.media[k].width,
                             sample.media[k].height, media[k].width, media[k].height);
    }
  }
  return Status::OK();
}

}  // namespace mmpt::store
