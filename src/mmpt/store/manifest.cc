#include "mmpt/store/manifest.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "mmpt/core/hash.h"
#include "mmpt/core/mapped_file.h"

namespace mmpt::store {

using nlohmann::json;

uint64_t Manifest::num_samples() const {
  uint64_t total = 0;
  for (const ShardInfo& shard : shards) total += shard.samples;
  return total;
}

std::vector<std::string> Manifest::sources() const {
  std::vector<std::string> names;
  for (const ShardInfo& shard : shards) {
    if (std::find(names.begin(), names.end(), shard.source) == names.end()) {
      names.push_back(shard.source);
    }
  }
  return names;
}

std::string ChecksumHex(uint64_t xxh3) { return fmt::format("{:016x}", xxh3); }

bool DatasetSettings::SameAs(const DatasetSettings& other) const {
  auto compared = [](const DatasetSettings& s) {
    return std::tie(s.tokenizer_xxh3, s.vision, s.max_decode_pixels, s.audio, s.audio_in_video,
                    s.chat_template);
  };
  return compared(*this) == compared(other);
}

std::string DatasetSettings::Describe() const {
  return fmt::format(
      "tokenizer {} ({}), vision '{}', decode budget {}, audio '{}', audio in video {}, chat "
      "template {}",
      tokenizer, ChecksumHex(tokenizer_xxh3), vision, max_decode_pixels, audio, audio_in_video,
      ChecksumHex(Hash64(chat_template)));
}

std::string ManifestToJson(const Manifest& manifest) {
  json doc;
  doc["format"] = "mmpt-dataset";
  doc["format_version"] = manifest.format_version;
  doc["tokenizer"] = {{"path", manifest.tokenizer}, {"xxh3", ChecksumHex(manifest.tokenizer_xxh3)}};
  doc["vision"] = {{"preset", manifest.vision}, {"max_decode_pixels", manifest.max_decode_pixels}};
  if (!manifest.audio.empty()) doc["audio"] = {{"preset", manifest.audio}};
  if (manifest.audio_in_video) doc["audio"]["audio_in_video"] = true;
  doc["chat_template"] =
      manifest.chat_template.empty()
          ? json::object()
          : json::parse(manifest.chat_template, nullptr, /*allow_exceptions=*/false);
  json sources = json::array();
  for (const std::string& name : manifest.sources()) {
    uint64_t samples = 0, media = 0, tokens = 0, shards = 0;
    for (const ShardInfo& shard : manifest.shards) {
      if (shard.source != name) continue;
      samples += shard.samples;
      media += shard.media;
      tokens += shard.tokens;
      ++shards;
    }
    sources.push_back({{"name", name},
                       {"shards", shards},
                       {"samples", samples},
                       {"media", media},
                       {"text_tokens", tokens}});
  }
  doc["sources"] = sources;
  doc["samples"] = manifest.num_samples();
  if (manifest.planning) {
    doc["planning"] = {{"bytes", manifest.planning->bytes},
                       {"xxh3", ChecksumHex(manifest.planning->xxh3)}};
  }
  json shards = json::array();
  for (const ShardInfo& shard : manifest.shards) {
    json files = json::object();
    for (const auto& [suffix, file] : shard.files) {
      files[suffix] = {{"bytes", file.bytes}, {"xxh3", ChecksumHex(file.xxh3)}};
    }
    shards.push_back({{"source", shard.source},
                      {"path", shard.stem},
                      {"samples", shard.samples},
                      {"media", shard.media},
                      {"text_tokens", shard.tokens},
                      {"files", files}});
  }
  doc["shards"] = shards;
  return doc.dump(1) + "\n";
}

namespace {

// `where` names the manifest and the field's place in it, e.g. "m.json: shard 3 .zip".
Result<uint64_t> ParseHex(const json& value, const std::string& where) {
  if (!value.is_string()) return Status::Corrupt("{}: \"xxh3\" is not a hex string", where);
  const std::string& text = value.get_ref<const std::string&>();
  uint64_t out = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return Status::Corrupt("{}: \"xxh3\" is not a hex checksum: '{}'", where, text);
  }
  return out;
}

// A count: a JSON integer ≥ 0. nlohmann's get<uint64_t>() would cast a float (1e300: undefined
// behaviour) or wrap a negative number instead of refusing it.
Result<uint64_t> Count(const json& object, const char* field, const std::string& where) {
  const json& value = object.at(field);
  if (!value.is_number_unsigned()) {
    return Status::Corrupt("{}: \"{}\" is {}, not a non-negative integer", where, field,
                           value.is_number() ? value.dump() : value.type_name());
  }
  return value.get<uint64_t>();
}

}  // namespace

Result<Manifest> ManifestFromJson(std::string_view text, std::string_view name) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::Corrupt("{}: not a JSON object", name);
  }
  // nlohmann reports type mismatches as exceptions; they stay inside this function.
  try {
    Manifest manifest;
    if (doc.value("format", "") != "mmpt-dataset") {
      return Status::Corrupt("{}: \"format\" is not \"mmpt-dataset\"", name);
    }
    MMPT_ASSIGN_OR_RETURN(uint64_t version, Count(doc, "format_version", std::string(name)));
    if (version != kFormatVersion) {
      return Status::Corrupt(
          "{}: format_version {} (this build reads {}{})", name, version, kFormatVersion,
          version < kFormatVersion
              ? "; version 2 renders samples through a chat template: prepare the dataset again"
              : "");
    }
    manifest.format_version = kFormatVersion;
    const json& tokenizer = doc.at("tokenizer");
    manifest.tokenizer = tokenizer.at("path").get<std::string>();
    MMPT_ASSIGN_OR_RETURN(manifest.tokenizer_xxh3,
                          ParseHex(tokenizer.at("xxh3"), fmt::format("{}: tokenizer", name)));
    manifest.vision = doc.at("vision").at("preset").get<std::string>();
    MMPT_ASSIGN_OR_RETURN(manifest.max_decode_pixels,
                          Count(doc.at("vision"), "max_decode_pixels", std::string(name)));
    if (doc.contains("audio")) {
      const json& audio = doc.at("audio");
      if (!audio.is_object() || !audio.contains("preset") || !audio.at("preset").is_string()) {
        return Status::Corrupt("{}: \"audio\" must be an object with a string \"preset\"", name);
      }
      manifest.audio = audio.at("preset").get<std::string>();
      if (audio.contains("audio_in_video")) {
        if (!audio.at("audio_in_video").is_boolean()) {
          return Status::Corrupt("{}: \"audio\".\"audio_in_video\" must be true or false", name);
        }
        manifest.audio_in_video = audio.at("audio_in_video").get<bool>();
      }
    }
    if (!doc.at("chat_template").is_object()) {
      return Status::Corrupt("{}: \"chat_template\" is not an object", name);
    }
    manifest.chat_template = doc.at("chat_template").dump();
    if (doc.contains("planning")) {
      const std::string where = fmt::format("{}: planning", name);
      FileChecksum planning;
      MMPT_ASSIGN_OR_RETURN(planning.bytes, Count(doc.at("planning"), "bytes", where));
      MMPT_ASSIGN_OR_RETURN(planning.xxh3, ParseHex(doc.at("planning").at("xxh3"), where));
      manifest.planning = planning;
    }
    size_t index = 0;
    for (const json& item : doc.at("shards")) {
      const std::string where = fmt::format("{}: shard {}", name, index);
      ShardInfo shard;
      shard.source = item.at("source").get<std::string>();
      shard.stem = item.at("path").get<std::string>();
      MMPT_ASSIGN_OR_RETURN(shard.samples, Count(item, "samples", where));
      MMPT_ASSIGN_OR_RETURN(shard.media, Count(item, "media", where));
      MMPT_ASSIGN_OR_RETURN(shard.tokens, Count(item, "text_tokens", where));
      for (const char* suffix : kShardSuffixes) {
        const json& file = item.at("files").at(suffix);
        const std::string file_where = fmt::format("{} {}", where, suffix);
        FileChecksum checksum;
        MMPT_ASSIGN_OR_RETURN(checksum.bytes, Count(file, "bytes", file_where));
        MMPT_ASSIGN_OR_RETURN(checksum.xxh3, ParseHex(file.at("xxh3"), file_where));
        shard.files[suffix] = checksum;
      }
      if (shard.stem.empty() || shard.source.empty()) {
        return Status::Corrupt("{}: shard {} has an empty path or source", name, index);
      }
      manifest.shards.push_back(std::move(shard));
      ++index;
    }
    return manifest;
  } catch (const json::exception& e) {
    return Status::Corrupt("{}: {}", name, e.what());
  }
}

Result<Manifest> ReadManifest(const std::string& dir) {
  std::string path = dir + "/" + kManifestName;
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("{}: no {} (not a dataset, or its prepare did not finish)", dir,
                              kManifestName);
    }
    return text.status();
  }
  return ManifestFromJson(*text, path);
}

Status WriteManifest(const std::string& dir, const Manifest& manifest) {
  return WriteFileAtomic(dir + "/" + kManifestName, ManifestToJson(manifest));
}

}  // namespace mmpt::store
