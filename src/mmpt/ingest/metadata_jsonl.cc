#include "mmpt/ingest/metadata_jsonl.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <utility>

#include <simdjson.h>

#include "mmpt/core/mapped_file.h"
#include "mmpt/cost/text_estimate.h"
#include "mmpt/ingest/adapter.h"
#include "mmpt/media/audio.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/planning_table.h"

namespace mmpt::ingest {
namespace {

namespace fs = std::filesystem;

// The media of one metadata line.
struct LineMedia {
  std::vector<cost::ImageSize> images;
  std::vector<cost::VideoItem> videos;
  std::vector<cost::AudioItem> audios;
};

// Read the number `key` of `item` (element `i` of array `array`) into `out`: finite, positive
// and at most `max`.
Status PositiveNumber(simdjson::ondemand::object& item, std::string_view array, size_t i,
                      std::string_view key, double max, double* out) {
  double v = 0;
  if (item[key].get_double().get(v) != simdjson::SUCCESS || !(v > 0) || !(v <= max)) {
    return Status::Corrupt("{}[{}].{} must be a positive number (at most {})", array, i, key, max);
  }
  *out = v;
  return Status::OK();
}

// Parse "videos": [{"width", "height", "duration", "fps"}] or "audios": [{"duration",
// "sample_rate"}] (durations in seconds).
Status ParseAv(simdjson::ondemand::value& value, std::string_view key, LineMedia* media) {
  simdjson::ondemand::array array;
  if (value.get_array().get(array) != simdjson::SUCCESS) {
    return Status::Corrupt("'{}' must be an array", key);
  }
  // Bounds keep every derived count in 32 bits: 100 hours, 1000 fps, 1 MHz.
  constexpr double kMaxSeconds = 360000, kMaxFps = 1000, kMaxRate = 1e6, kMaxSide = 1e6;
  size_t i = 0;
  for (auto element : array) {
    simdjson::ondemand::object item;
    if (element.get_object().get(item) != simdjson::SUCCESS) {
      return Status::Corrupt("{}[{}] must be an object", key, i);
    }
    double duration = 0;
    if (key == "videos") {
      double width = 0, height = 0, fps = 0;
      MMPT_RETURN_IF_ERROR(PositiveNumber(item, key, i, "width", kMaxSide, &width));
      MMPT_RETURN_IF_ERROR(PositiveNumber(item, key, i, "height", kMaxSide, &height));
      MMPT_RETURN_IF_ERROR(PositiveNumber(item, key, i, "duration", kMaxSeconds, &duration));
      MMPT_RETURN_IF_ERROR(PositiveNumber(item, key, i, "fps", kMaxFps, &fps));
      if (width != std::floor(width) || height != std::floor(height)) {
        return Status::Corrupt("{}[{}]: width and height must be integers", key, i);
      }
      cost::VideoItem video;
      video.width = static_cast<uint32_t>(width);
      video.height = static_cast<uint32_t>(height);
      video.frames = static_cast<uint32_t>(std::llround(duration * fps));
      video.fps_milli = static_cast<uint32_t>(std::llround(fps * 1000));
      media->videos.push_back(video);
    } else {
      double rate = 0;
      MMPT_RETURN_IF_ERROR(PositiveNumber(item, key, i, "duration", kMaxSeconds, &duration));
      MMPT_RETURN_IF_ERROR(PositiveNumber(item, key, i, "sample_rate", kMaxRate, &rate));
      cost::AudioItem audio;
      audio.samples =
          media::SamplesOfDuration(static_cast<uint32_t>(std::llround(duration * 1000)));
      audio.sample_rate_hz = static_cast<uint32_t>(std::llround(rate));
      media->audios.push_back(audio);
    }
    ++i;
  }
  return Status::OK();
}

// Give the items of one kind text positions spread over the sample (cost::SpreadTextPosition).
template <typename Item>
void Spread(uint32_t text_tokens, std::vector<Item>* items) {
  for (size_t i = 0; i < items->size(); ++i) {
    (*items)[i].text_position = cost::SpreadTextPosition(text_tokens, i, items->size());
  }
}

// Parse one JSONL object into (source name, text tokens, media).
Status ParseLine(simdjson::ondemand::document& doc, std::string* source, uint32_t* text_tokens,
                 LineMedia* media) {
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return Status::Corrupt("not a JSON object");
  bool have_tokens = false;
  uint64_t template_tokens = 0;
  std::vector<cost::ImageSize>* images = &media->images;
  images->clear();
  media->videos.clear();
  media->audios.clear();
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return Status::Corrupt("bad key");
    simdjson::ondemand::value value;
    if (field.value().get(value) != simdjson::SUCCESS) {
      return Status::Corrupt("bad value for '{}'", key);
    }
    if (key == "source") {
      std::string_view s;
      if (value.get_string().get(s) != simdjson::SUCCESS) {
        return Status::Corrupt("'source' must be a string");
      }
      *source = std::string(s);
    } else if (key == "text_tokens" || key == "template_tokens") {
      uint64_t v;
      if (value.get_uint64().get(v) != simdjson::SUCCESS || v > UINT32_MAX) {
        return Status::Corrupt("'{}' must be a non-negative 32-bit integer", key);
      }
      if (key == "text_tokens") {
        *text_tokens = static_cast<uint32_t>(v);
        have_tokens = true;
      } else {
        template_tokens = v;
      }
    } else if (key == "text") {
      std::string_view s;
      if (value.get_string().get(s) != simdjson::SUCCESS) {
        return Status::Corrupt("'text' must be a string");
      }
      if (!have_tokens) *text_tokens = cost::EstimateTextTokens(s);
      have_tokens = true;
    } else if (key == "images" || key == "image_sizes") {
      simdjson::ondemand::array array;
      if (value.get_array().get(array) != simdjson::SUCCESS) {
        return Status::Corrupt("'{}' must be an array", key);
      }
      for (auto element : array) {
        uint64_t w = 0, h = 0;
        if (key == "images") {
          simdjson::ondemand::object image;
          if (element.get_object().get(image) != simdjson::SUCCESS ||
              image["width"].get_uint64().get(w) != simdjson::SUCCESS ||
              image["height"].get_uint64().get(h) != simdjson::SUCCESS) {
            return Status::Corrupt("images[{}] must be {{\"width\": W, \"height\": H}}",
                                   images->size());
          }
        } else {
          simdjson::ondemand::array pair;
          if (element.get_array().get(pair) != simdjson::SUCCESS) {
            return Status::Corrupt("image_sizes[{}] must be [width, height]", images->size());
          }
          size_t k = 0;
          for (auto v : pair) {
            uint64_t x;
            if (v.get_uint64().get(x) != simdjson::SUCCESS || k >= 2) {
              return Status::Corrupt("image_sizes[{}] must be [width, height]", images->size());
            }
            (k++ == 0 ? w : h) = x;
          }
          if (k != 2)
            return Status::Corrupt("image_sizes[{}] must be [width, height]", images->size());
        }
        if (w > UINT32_MAX || h > UINT32_MAX) {
          return Status::Corrupt("image {} size {}x{} is out of range", images->size(), w, h);
        }
        images->push_back({static_cast<uint32_t>(w), static_cast<uint32_t>(h)});
      }
    } else if (key == "videos" || key == "audios") {
      MMPT_RETURN_IF_ERROR(ParseAv(value, key, media));
    }
  }
  if (!have_tokens) return Status::Corrupt("needs 'text_tokens' or 'text'");
  uint64_t total = uint64_t{*text_tokens} + template_tokens;
  if (total > UINT32_MAX) return Status::Corrupt("text tokens overflow");
  *text_tokens = static_cast<uint32_t>(total);
  Spread(*text_tokens, &media->videos);
  Spread(*text_tokens, &media->audios);
  return Status::OK();
}

// `path` as one shell word: as is when it holds only characters no shell treats specially.
std::string ShellWord(const std::string& path) {
  constexpr std::string_view kPlain =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=.,:/@%";
  if (!path.empty() && path.find_first_not_of(kPlain) == std::string::npos) return path;
  std::string quoted = "'";
  for (char c : path) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The error for a line that is no planning metadata but a record `mmpt prepare` reads (a
// LLaVA conversation, a chat, a document), or OK for any other line. Such a record is raw
// data: its tokens are what prepare renders (chat template, tokenizer, image placeholders),
// which only prepare does exactly, so the error names that command for every input instead of
// guessing a count.
Status RawRecordError(std::string_view line, const std::vector<std::string>& paths,
                      const std::string& path, uint64_t line_no) {
  InputFormat format = InputFormat::kAuto;
  if (!RecordParser().Parse(line, InputFormat::kAuto, {path, line_no}, &format).ok()) {
    return Status::OK();
  }
  std::string inputs;
  for (const std::string& input : paths) inputs += ShellWord(input) + " ";
  const fs::path first(paths.front());
  const std::string out = (first.parent_path() / (first.stem().string() + "-dataset")).string();
  return Status::InvalidArgument(
      "a {} record (raw data), not planning metadata ('text_tokens' or 'text', 'images'): "
      "only `mmpt prepare` counts its tokens exactly, as the loader renders them; prepare it, "
      "then plan the dataset: mmpt prepare {}--out {}",
      InputFormatName(format), inputs, ShellWord(out));
}

}  // namespace

Result<cost::SampleTable> ReadMetadataJsonl(const std::vector<std::string>& paths) {
  cost::SampleTableBuilder builder;
  std::map<std::string, uint32_t> source_ids;
  simdjson::ondemand::parser parser;
  LineMedia media;
  for (const std::string& path : paths) {
    MMPT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
    std::string default_source = fs::path(path).stem().string();
    std::string_view text = file.text();
    size_t line_no = 0, pos = 0;
    simdjson::padded_string line_buffer;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(pos, end - pos);
      pos = end + 1;
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      line_buffer = simdjson::padded_string(line);
      simdjson::ondemand::document doc;
      std::string source = default_source;
      uint32_t text_tokens = 0;
      Status status;
      if (parser.iterate(line_buffer).get(doc) != simdjson::SUCCESS) {
        status = Status::Corrupt("not JSON");
      } else {
        status = ParseLine(doc, &source, &text_tokens, &media);
        if (!status.ok()) {
          Status raw = RawRecordError(line, paths, path, line_no);
          if (!raw.ok()) status = std::move(raw);
        }
      }
      if (status.ok()) {
        auto [it, inserted] = source_ids.try_emplace(source, 0);
        if (inserted) it->second = builder.AddSource(source);
        status =
            builder.Add(it->second, text_tokens, media.images, {}, {media.videos, media.audios});
      }
      if (!status.ok()) return status.WithContext(fmt::format("{}:{}", path, line_no));
    }
  }
  auto table = std::move(builder).Finish();
  if (!table.ok()) {
    std::string names;
    for (const std::string& path : paths) names += (names.empty() ? "" : ", ") + path;
    return Status::InvalidArgument("no samples in {}", names.empty() ? "(no input files)" : names);
  }
  return table;
}

Result<cost::SampleTable> ReadPlanningTable(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return store::OpenPlanningTable(path);
  return ReadMetadataJsonl({path});
}

}  // namespace mmpt::ingest
