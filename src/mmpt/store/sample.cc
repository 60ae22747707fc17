#include "mmpt/store/sample.h"

#include <fmt/format.h>

#include <iterator>
#include <utility>

#include "mmpt/store/sample_validate_internal.h"

namespace mmpt::store {

namespace {
constexpr std::string_view kMediaKindNames[] = {"image", "video", "audio"};
}  // namespace

std::string_view MediaKindName(MediaKind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < std::size(kMediaKindNames) ? kMediaKindNames[i] : "unknown";
}

Result<MediaKind> ParseMediaKind(std::string_view name) {
  for (size_t i = 0; i < std::size(kMediaKindNames); ++i) {
    if (kMediaKindNames[i] == name) return static_cast<MediaKind>(i);
  }
  return Status::InvalidArgument("unknown media kind '{}' (expected image, video or audio)", name);
}

Status ValidateSample(const Sample& sample) { return internal::ValidateSampleOf(sample); }

void AppendJsonString(std::string_view text, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t run = 0;  // start of the pending run of bytes that need no escape
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      default:
        out.append("\\u00");
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
    }
  }
  out.append(text.data() + run, text.size() - run);
  out.push_back('"');
}

void AppendSampleJson(const Sample& sample, std::string& out) {
  out.append("{\"key\":");
  AppendJsonString(sample.key, out);
  out.append(",\"source\":");
  AppendJsonString(sample.source, out);
  out.append(",\"segments\":[");
  for (size_t i = 0; i < sample.segments.size(); ++i) {
    const Segment& segment = sample.segments[i];
    if (i > 0) out.push_back(',');
    out.push_back('{');
    if (!segment.role.empty()) {
      out.append("\"role\":");
      AppendJsonString(segment.role, out);
      out.push_back(',');
    }
    if (segment.turn > 0) fmt::format_to(std::back_inserter(out), "\"turn\":{},", segment.turn);
    if (segment.is_media) {
      fmt::format_to(std::back_inserter(out), "\"media\":{}", segment.media_index);
    } else {
      out.append("\"text\":");
      AppendJsonString(segment.text, out);
    }
    out.push_back('}');
  }
  out.append("],\"media\":[");
  for (size_t j = 0; j < sample.media.size(); ++j) {
    const MediaRef& media = sample.media[j];
    if (j > 0) out.push_back(',');
    out.push_back('{');
    bool first = true;
    auto comma = [&] {
      if (!first) out.push_back(',');
      first = false;
    };
    if (!media.path.empty()) {
      comma();
      out.append("\"path\":");
      AppendJsonString(media.path, out);
    }
    if (!media.entry.empty()) {
      comma();
      out.append("\"entry\":");
      AppendJsonString(media.entry, out);
    }
    if (media.kind != MediaKind::kImage) {
      comma();
      out.append("\"kind\":");
      AppendJsonString(MediaKindName(media.kind), out);
    }
    if (media.width != 0 || media.height != 0) {
      comma();
      fmt::format_to(std::back_inserter(out), "\"width\":{},\"height\":{}", media.width,
                     media.height);
    }
    // Audio always gives its count: without one, a metadata-only clip is counted from its
    // duration (ReadSampleLine).
    if (media.frames != 1 || media.kind == MediaKind::kAudio) {
      comma();
      fmt::format_to(std::back_inserter(out), "\"frames\":{}", media.frames);
    }
    for (auto [name, value] :
         {std::pair{"duration_ms", media.duration_ms}, std::pair{"fps_milli", media.fps_milli},
          std::pair{"sample_rate_hz", media.sample_rate_hz}, std::pair{"start_ms", media.start_ms},
          std::pair{"end_ms", media.end_ms}}) {
      if (value == 0) continue;
      comma();
      fmt::format_to(std::back_inserter(out), "\"{}\":{}", name, value);
    }
    out.push_back('}');
  }
  out.append("]}\n");
}

}  // namespace mmpt::store
