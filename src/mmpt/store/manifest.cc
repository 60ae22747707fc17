#include "mmpt/store/manifest.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "mmpt/core/hash.h"
#include "mmpt/core/mapped_file.h"

namespace mmpt::store {

using nlohmann::json;

std::vector<SourceCounts> CountSources(const std::vector<ShardInfo>& shards) {
  std::vector<SourceCounts> out;
  std::unordered_map<std::string_view, size_t> index;
  for (const ShardInfo& shard : shards) {
    auto [it, added] = index.try_emplace(shard.source, out.size());
    if (added) out.push_back({.name = shard.source});
    SourceCounts& c = out[it->second];
    ++c.shards;
    c.samples += shard.samples;
    c.media += shard.media;
    c.tokens += shard.tokens;
  }
  return out;
}

std::vector<SourceCounts> Manifest::Counts() const {
  return source_counts.empty() ? CountSources(shards) : source_counts;
}

uint64_t Manifest::num_samples() const {
  uint64_t total = 0;
  for (const SourceCounts& c : Counts()) total += c.samples;
  return total;
}

std::vector<std::string> Manifest::sources() const {
  std::vector<std::string> names;
  for (const SourceCounts& c : Counts()) names.push_back(c.name);
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

std::string ManifestToJson(const Manifest& manifest, std::optional<FileChecksum> shard_table) {
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
  for (const SourceCounts& c : manifest.Counts()) {
    sources.push_back({{"name", c.name},
                       {"shards", c.shards},
                       {"samples", c.samples},
                       {"media", c.media},
                       {"text_tokens", c.tokens}});
  }
  doc["sources"] = sources;
  doc["samples"] = manifest.num_samples();
  if (manifest.planning) {
    doc["planning"] = {{"bytes", manifest.planning->bytes},
                       {"xxh3", ChecksumHex(manifest.planning->xxh3)}};
  }
  if (shard_table) {
    doc["shards"] = {{"file", kShardTableName},
                     {"bytes", shard_table->bytes},
                     {"xxh3", ChecksumHex(shard_table->xxh3)}};
    return doc.dump(1) + "\n";
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
    if (version < kOldestFormatVersion || version > kFormatVersion) {
      return Status::Corrupt(
          "{}: format_version {} (this build reads {} to {}{})", name, version,
          kOldestFormatVersion, kFormatVersion,
          version < kOldestFormatVersion
              ? "; version 2 renders samples through a chat template: prepare the dataset again"
              : "");
    }
    manifest.format_version = static_cast<uint32_t>(version);
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
    if (doc.contains("sources")) {
      for (const json& item : doc.at("sources")) {
        const std::string where = fmt::format("{}: sources", name);
        SourceCounts c;
        c.name = item.at("name").get<std::string>();
        MMPT_ASSIGN_OR_RETURN(c.shards, Count(item, "shards", where));
        MMPT_ASSIGN_OR_RETURN(c.samples, Count(item, "samples", where));
        MMPT_ASSIGN_OR_RETURN(c.media, Count(item, "media", where));
        MMPT_ASSIGN_OR_RETURN(c.tokens, Count(item, "text_tokens", where));
        manifest.source_counts.push_back(std::move(c));
      }
    }
    const json& shard_list = doc.at("shards");
    if (shard_list.is_object()) {
      const std::string where = fmt::format("{}: shards", name);
      if (shard_list.value("file", "") != kShardTableName) {
        return Status::Corrupt("{}: \"file\" is not \"{}\"", where, kShardTableName);
      }
      FileChecksum table;
      MMPT_ASSIGN_OR_RETURN(table.bytes, Count(shard_list, "bytes", where));
      MMPT_ASSIGN_OR_RETURN(table.xxh3, ParseHex(shard_list.at("xxh3"), where));
      manifest.shard_table = table;
      return manifest;
    }
    size_t index = 0;
    for (const json& item : shard_list) {
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
    if (!manifest.source_counts.empty() &&
        manifest.source_counts != CountSources(manifest.shards)) {
      return Status::Corrupt("{}: \"sources\" disagree with the shards' counts", name);
    }
    manifest.source_counts = CountSources(manifest.shards);
    return manifest;
  } catch (const json::exception& e) {
    return Status::Corrupt("{}: {}", name, e.what());
  }
}

namespace {

// mmpt.shards: a header, one fixed-width record per shard, then the shards' stems.
struct ShardTableHeader {
  char magic[8];
  uint32_t version;
  uint32_t record_bytes;
  uint64_t count;
  uint64_t stem_bytes;
};
static_assert(sizeof(ShardTableHeader) == 32);
constexpr char kShardTableMagic[8] = {'M', 'M', 'P', 'T', 'S', 'H', 'R', 'D'};
constexpr size_t kShardFiles = std::size(kShardSuffixes);

struct ShardRecord {
  uint32_t source;  // index into the manifest's sources
  uint32_t stem_size;
  uint64_t stem_offset;  // into the stems after the records
  uint64_t samples;
  uint64_t media;
  uint64_t tokens;
  FileChecksum files[kShardFiles];  // kShardSuffixes' order
};
static_assert(sizeof(ShardRecord) == 120);

}  // namespace

std::string EncodeShardTable(const Manifest& manifest) {
  std::unordered_map<std::string, uint32_t> source_index;
  for (const SourceCounts& c : CountSources(manifest.shards)) {
    source_index.emplace(c.name, static_cast<uint32_t>(source_index.size()));
  }
  std::string stems;
  std::vector<ShardRecord> records;
  records.reserve(manifest.shards.size());
  for (const ShardInfo& shard : manifest.shards) {
    ShardRecord r{};
    r.source = source_index.at(shard.source);
    r.stem_size = static_cast<uint32_t>(shard.stem.size());
    r.stem_offset = stems.size();
    r.samples = shard.samples;
    r.media = shard.media;
    r.tokens = shard.tokens;
    for (size_t f = 0; f < kShardFiles; ++f) {
      auto it = shard.files.find(kShardSuffixes[f]);
      if (it != shard.files.end()) r.files[f] = it->second;
    }
    stems += shard.stem;
    records.push_back(r);
  }
  ShardTableHeader h{};
  std::memcpy(h.magic, kShardTableMagic, 8);
  h.version = 1;
  h.record_bytes = sizeof(ShardRecord);
  h.count = records.size();
  h.stem_bytes = stems.size();
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  out.append(reinterpret_cast<const char*>(records.data()), records.size() * sizeof(ShardRecord));
  out += stems;
  return out;
}

Result<ShardTable> ShardTable::FromBytes(std::string bytes, std::string_view name,
                                         const std::vector<SourceCounts>& sources) {
  ShardTable table;
  table.owned_ = std::make_unique<std::string>(std::move(bytes));
  table.bytes_ = std::as_bytes(std::span<const char>(*table.owned_));
  return Check(std::move(table), name, sources);
}

Result<ShardTable> ShardTable::Open(const std::string& dir, const Manifest& manifest) {
  if (!manifest.shards.empty() || !manifest.shard_table) {
    return FromBytes(EncodeShardTable(manifest), dir + "/" + kManifestName,
                     CountSources(manifest.shards));
  }
  const std::string path = dir + "/" + kShardTableName;
  ShardTable table;
  MMPT_ASSIGN_OR_RETURN(table.file_, MappedFile::Open(path));
  table.bytes_ = table.file_.bytes();
  const std::string_view text = table.file_.text();
  if (text.size() != manifest.shard_table->bytes || Hash64(text) != manifest.shard_table->xxh3) {
    return Status::Corrupt("{}: {} bytes, checksum {}; {}/{} records {} bytes, {}", path,
                           text.size(), ChecksumHex(Hash64(text)), dir, kManifestName,
                           manifest.shard_table->bytes, ChecksumHex(manifest.shard_table->xxh3));
  }
  return Check(std::move(table), path, manifest.source_counts);
}

Result<ShardTable> ShardTable::Check(ShardTable table, std::string_view name,
                                     const std::vector<SourceCounts>& sources) {
  const std::span<const std::byte> bytes = table.bytes_;
  ShardTableHeader h;
  if (bytes.size() < sizeof(h) || std::memcmp(bytes.data(), kShardTableMagic, 8) != 0) {
    return Status::Corrupt("{}: not an mmpt shard table (no MMPTSHRD header)", name);
  }
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (h.version != 1 || h.record_bytes != sizeof(ShardRecord)) {
    return Status::Corrupt(
        "{}: shard table version {} with {}-byte records (this build reads "
        "version 1, {} bytes)",
        name, h.version, h.record_bytes, sizeof(ShardRecord));
  }
  if (h.count > bytes.size() / sizeof(ShardRecord) ||
      sizeof(h) + h.count * sizeof(ShardRecord) + h.stem_bytes != bytes.size()) {
    return Status::Corrupt("{}: {} bytes for {} shards and {} bytes of paths: truncated", name,
                           bytes.size(), h.count, h.stem_bytes);
  }
  table.count_ = h.count;
  const size_t stems_at = sizeof(h) + h.count * sizeof(ShardRecord);
  table.stems_ =
      std::string_view(reinterpret_cast<const char*>(bytes.data()) + stems_at, h.stem_bytes);
  // Every record names a source and a path inside the table, and the shards add up to the
  // manifest's per-source counts.
  std::vector<SourceCounts> counts(sources.size());
  for (uint64_t i = 0; i < h.count; ++i) {
    ShardRecord r;
    std::memcpy(&r, table.Record(i), sizeof(r));
    if (r.source >= sources.size() || r.stem_size == 0 || r.stem_offset > h.stem_bytes ||
        r.stem_size > h.stem_bytes - r.stem_offset) {
      return Status::Corrupt("{}: shard {} names source {} of {} or a path outside the table", name,
                             i, r.source, sources.size());
    }
    SourceCounts& c = counts[r.source];
    c.name = sources[r.source].name;
    ++c.shards;
    c.samples += r.samples;
    c.media += r.media;
    c.tokens += r.tokens;
  }
  if (counts != sources) {
    return Status::Corrupt("{}: its shards' counts disagree with the manifest's sources", name);
  }
  return table;
}

const std::byte* ShardTable::Record(size_t i) const {
  return bytes_.data() + sizeof(ShardTableHeader) + i * sizeof(ShardRecord);
}

namespace {
template <typename T>
T RecordField(const std::byte* record, size_t offset) {
  T value;
  std::memcpy(&value, record + offset, sizeof(T));
  return value;
}
}  // namespace

uint32_t ShardTable::source(size_t i) const {
  return RecordField<uint32_t>(Record(i), offsetof(ShardRecord, source));
}
std::string_view ShardTable::stem(size_t i) const {
  return stems_.substr(RecordField<uint64_t>(Record(i), offsetof(ShardRecord, stem_offset)),
                       RecordField<uint32_t>(Record(i), offsetof(ShardRecord, stem_size)));
}
uint64_t ShardTable::samples(size_t i) const {
  return RecordField<uint64_t>(Record(i), offsetof(ShardRecord, samples));
}
uint64_t ShardTable::media(size_t i) const {
  return RecordField<uint64_t>(Record(i), offsetof(ShardRecord, media));
}
uint64_t ShardTable::tokens(size_t i) const {
  return RecordField<uint64_t>(Record(i), offsetof(ShardRecord, tokens));
}

ShardInfo ShardTable::Info(size_t i, const std::vector<SourceCounts>& sources) const {
  ShardRecord r;
  std::memcpy(&r, Record(i), sizeof(r));
  ShardInfo shard;
  shard.source = sources[r.source].name;
  shard.stem = std::string(stem(i));
  shard.samples = r.samples;
  shard.media = r.media;
  shard.tokens = r.tokens;
  for (size_t f = 0; f < kShardFiles; ++f) shard.files[kShardSuffixes[f]] = r.files[f];
  return shard;
}

Result<Manifest> ReadManifestFile(const std::string& path, ShardList shards) {
  MMPT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  MMPT_ASSIGN_OR_RETURN(Manifest manifest, ManifestFromJson(text, path));
  if (!manifest.shard_table || shards == ShardList::kSkip) return manifest;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  MMPT_ASSIGN_OR_RETURN(const ShardTable table,
                        ShardTable::Open(dir.empty() ? "." : dir.string(), manifest));
  manifest.shards.reserve(table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    manifest.shards.push_back(table.Info(i, manifest.source_counts));
  }
  return manifest;
}

Result<Manifest> ReadManifest(const std::string& dir, ShardList shards) {
  std::string path = dir + "/" + kManifestName;
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    return Status::NotFound("{}: no {} (not a dataset, or its prepare did not finish)", dir,
                            kManifestName);
  }
  return ReadManifestFile(path, shards);
}

Status WriteManifest(const std::string& dir, const Manifest& manifest) {
  if (manifest.shards.empty() && manifest.num_samples() > 0) {
    return Status::InvalidArgument(
        "{}: a manifest of {} samples read without its shards (ShardList::kSkip, or a Dataset's) "
        "cannot be written: it would name no shards",
        dir, manifest.num_samples());
  }
  const std::string table = EncodeShardTable(manifest);
  MMPT_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + kShardTableName, table));
  Manifest written = manifest;
  written.format_version = kFormatVersion;
  written.source_counts = CountSources(manifest.shards);
  return WriteFileAtomic(dir + "/" + kManifestName,
                         ManifestToJson(written, FileChecksum{table.size(), Hash64(table)}));
}

}  // namespace mmpt::store
