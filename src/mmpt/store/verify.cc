#include "mmpt/store/verify.h"

#include <algorithm>
#include <optional>

#include "mmpt/core/hash.h"
#include "mmpt/core/mapped_file.h"
#include "mmpt/core/progress.h"
#include "mmpt/core/thread_pool.h"
#include "mmpt/store/jsonl_index.h"
#include "mmpt/store/manifest.h"
#include "mmpt/store/meta.h"
#include "mmpt/store/planning_table.h"
#include "mmpt/store/sample_reader.h"
#include "mmpt/store/zip_reader.h"

namespace mmpt::store {
namespace {

// Check one shard's files against each other and against the manifest.
Status VerifyShard(const std::string& dir, const ShardInfo& shard, uint64_t* bytes_read) {
  const std::string base = dir + "/" + shard.stem;
  MappedFile files[std::size(kShardSuffixes)];
  for (size_t f = 0; f < std::size(kShardSuffixes); ++f) {
    MMPT_ASSIGN_OR_RETURN(files[f], MappedFile::Open(base + kShardSuffixes[f]));
    *bytes_read += files[f].size_bytes();
  }
  const MappedFile& jsonl = files[0];
  const MappedFile& idx = files[1];
  const MappedFile& zip_file = files[2];
  const MappedFile& meta_file = files[3];
  const MappedFile& tok = files[4];

  // Structure first, so damage is named by record where it can be.
  MMPT_RETURN_IF_ERROR(ValidateMeta(meta_file.bytes(), meta_file.path()));
  MMPT_ASSIGN_OR_RETURN(MetaTable meta, MetaTable::Open(meta_file.path()));
  if (meta.num_samples() != shard.samples || meta.num_media() != shard.media ||
      meta.num_tokens() != shard.tokens) {
    return Status::Corrupt("{}: {} samples / {} media / {} tokens, the manifest says {} / {} / {}",
                           meta.path(), meta.num_samples(), meta.num_media(), meta.num_tokens(),
                           shard.samples, shard.media, shard.tokens);
  }
  if (tok.size_bytes() != meta.num_tokens() * sizeof(int32_t)) {
    return Status::Corrupt("{}: {} bytes, .meta counts {} tokens ({} bytes)", tok.path(),
                           tok.size_bytes(), meta.num_tokens(), meta.num_tokens() * 4);
  }
  MMPT_ASSIGN_OR_RETURN(LineIndex index,
                        LineIndex::FromBytes(idx.bytes(), jsonl.size_bytes(), idx.path()));
  if (index.size() != meta.num_samples()) {
    return Status::Corrupt("{}: {} lines, .meta has {} samples", idx.path(), index.size(),
                           meta.num_samples());
  }
  MMPT_ASSIGN_OR_RETURN(ZipReader zip, ZipReader::Parse(zip_file.bytes(), zip_file.path()));
  size_t next_entry = 0;
  SampleView sample;
  std::string_view text = jsonl.text();
  for (size_t i = 0; i < index.size(); ++i) {
    const uint64_t line_number = i + 1;
    if (text[index.begin(i) + index.length(i) - 1] != '\n') {
      return Status::Corrupt("{}:{}: the line does not end where the index says", jsonl.path(),
                             line_number);
    }
    Status read = ReadSampleLine(LineAt(text, index, i), sample);
    if (read.ok()) read = CheckSampleAgainstMeta(sample, meta.sample(i), meta.media_of(i));
    if (!read.ok()) {
      return Status::Corrupt("{}:{}: {}", jsonl.path(), line_number, read.message());
    }
    std::span<const MediaMeta> items = meta.media_of(i);
    for (size_t j = 0, medium = 0; j < items.size(); ++j) {
      if (!items[j].first_of_medium()) continue;  // a grouped video's later groups share its entry
      const MediaMeta& m = items[j];
      const size_t k = medium++;
      const MediaView& ref = sample.media[k];
      if (m.flags & kMediaWithoutData) {
        if (!ref.entry.empty()) {
          return Status::Corrupt("{}:{}: media {} names entry '{}' but .meta has no data",
                                 jsonl.path(), line_number, k, ref.entry);
        }
        continue;
      }
      if (next_entry >= zip.entries().size()) {
        return Status::Corrupt("{}: entry for sample {} media {} ('{}') is missing",
                               zip_file.path(), i, k, ref.entry);
      }
      const ZipEntry& entry = zip.entries()[next_entry];
      if (entry.name != ref.entry || entry.method != 0 || entry.data_offset != m.data_offset ||
          entry.compressed_size != m.data_size || entry.crc32 != m.crc32) {
        return Status::Corrupt(
            "{}: entry {} ('{}', method {}, at {}+{}, crc {:08x}) disagrees with sample {} "
            "media {} ('{}', at {}+{}, crc {:08x})",
            zip_file.path(), next_entry, entry.name, entry.method, entry.data_offset,
            entry.compressed_size, entry.crc32, i, k, ref.entry, m.data_offset, m.data_size,
            m.crc32);
      }
      uint32_t crc = Crc32(zip.Data(next_entry));
      if (crc != entry.crc32) {
        return Status::Corrupt(
            "{}: entry '{}' (sample {} line {}, media {}): CRC-32 {:08x}, "
            "stored {:08x}",
            zip_file.path(), entry.name, i, line_number, k, crc, entry.crc32);
      }
      ++next_entry;
    }
  }
  if (next_entry != zip.entries().size()) {
    return Status::Corrupt("{}: {} entries, the samples refer to {}", zip_file.path(),
                           zip.entries().size(), next_entry);
  }
  // Checksums last: they catch what the structure cannot (a flipped bit inside text or ids).
  for (size_t f = 0; f < std::size(kShardSuffixes); ++f) {
    auto expected = shard.files.find(kShardSuffixes[f]);
    if (expected == shard.files.end()) {
      return Status::Corrupt("{}: the manifest has no checksum for it", files[f].path());
    }
    uint64_t checksum = Hash64(files[f].bytes());
    if (files[f].size_bytes() != expected->second.bytes || checksum != expected->second.xxh3) {
      return Status::Corrupt("{}: {} bytes with XXH3 {}, the manifest says {} bytes with {}",
                             files[f].path(), files[f].size_bytes(), ChecksumHex(checksum),
                             expected->second.bytes, ChecksumHex(expected->second.xxh3));
    }
  }
  return Status::OK();
}

}  // namespace

Status VerifyDataset(const std::string& dir, const VerifyOptions& options, VerifyReport* report) {
  MMPT_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(dir));
  std::vector<Status> results(manifest.shards.size());
  std::vector<uint64_t> bytes(manifest.shards.size(), 0);
  std::optional<ProgressBar> progress;
  if (options.progress) progress.emplace("verify", manifest.shards.size(), "shards");
  ThreadPool pool(options.threads);
  pool.ParallelFor(0, manifest.shards.size(), [&](size_t s) {
    results[s] = VerifyShard(dir, manifest.shards[s], &bytes[s]);
    if (progress) progress->Add(1);
  });
  progress.reset();
  VerifyReport counts;
  for (size_t s = 0; s < results.size(); ++s) {
    if (!results[s].ok()) return results[s];
    counts.shards += 1;
    counts.samples += manifest.shards[s].samples;
    counts.media += manifest.shards[s].media;
    counts.bytes += bytes[s];
  }
  // The planning table: exactly what the shards' .meta tables make (a dataset prepared before
  // it has none to check).
  if (manifest.planning) {
    MMPT_ASSIGN_OR_RETURN(cost::SampleTable mapped, OpenPlanningTable(dir, manifest));
    MMPT_ASSIGN_OR_RETURN(Dataset dataset, Dataset::Open(dir, manifest));
    MMPT_ASSIGN_OR_RETURN(cost::SampleTable built, BuildPlanningTable(dataset));
    const auto a = mapped.bytes(), b = built.bytes();
    if (a.size() != b.size() || !std::equal(a.begin(), a.end(), b.begin())) {
      const auto diff = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
      return Status::Corrupt("{}: differs from the shards' .meta tables at byte {}",
                             mapped.origin(), diff.first - a.begin());
    }
    counts.bytes += a.size();
  }
  if (report != nullptr) *report = counts;
  return Status::OK();
}

}  // namespace mmpt::store
