#include "mmpt/store/dataset.h"

#include <algorithm>

#include "mmpt/core/mapped_file.h"
#include "mmpt/store/jsonl_index.h"
#include "mmpt/store/sample_reader.h"

namespace mmpt::store {

// A shard's data files, mapped on first use (so opening a dataset of many shards stays cheap).
struct Dataset::ShardFiles {
  std::once_flag once;
  Status status;
  MappedFile jsonl;
  MappedFile idx_file;
  LineIndex index;
  MappedFile zip;
  MappedFile tok;
};

Dataset::~Dataset() = default;
Dataset::Dataset(Dataset&&) noexcept = default;
Dataset& Dataset::operator=(Dataset&&) noexcept = default;

Result<Dataset> Dataset::Open(const std::string& dir) {
  MMPT_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(dir));
  return Open(dir, std::move(manifest));
}

Result<Dataset> Dataset::Open(const std::string& dir, Manifest manifest) {
  Dataset dataset;
  dataset.dir_ = dir;
  dataset.manifest_ = std::move(manifest);
  dataset.sources_ = dataset.manifest_.sources();
  dataset.shard_begin_.push_back(0);
  for (const ShardInfo& shard : dataset.manifest_.shards) {
    std::string path = dir + "/" + shard.stem + ".meta";
    MMPT_ASSIGN_OR_RETURN(MetaTable table, MetaTable::Open(path));
    if (table.num_samples() != shard.samples || table.num_media() != shard.media ||
        table.num_tokens() != shard.tokens) {
      return Status::Corrupt(
          "{}: {} samples, {} media, {} tokens where the manifest says {}, "
          "{}, {}",
          path, table.num_samples(), table.num_media(), table.num_tokens(), shard.samples,
          shard.media, shard.tokens);
    }
    dataset.shard_begin_.push_back(dataset.shard_begin_.back() + shard.samples);
    const auto source = static_cast<uint32_t>(
        std::find(dataset.sources_.begin(), dataset.sources_.end(), shard.source) -
        dataset.sources_.begin());
    dataset.shard_source_.push_back(source);
    dataset.source_shards_.resize(dataset.sources_.size());
    dataset.source_shard_begin_.resize(dataset.sources_.size(), std::vector<uint64_t>{0});
    dataset.source_shards_[source].push_back(dataset.shard_source_.size() - 1);
    dataset.source_shard_begin_[source].push_back(dataset.source_shard_begin_[source].back() +
                                                  shard.samples);
    dataset.metas_.push_back(std::move(table));
    dataset.files_.push_back(std::make_unique<ShardFiles>());
  }
  return dataset;
}

std::pair<size_t, uint64_t> Dataset::Locate(uint64_t i) const {
  size_t shard =
      std::upper_bound(shard_begin_.begin(), shard_begin_.end(), i) - shard_begin_.begin() - 1;
  return {shard, i - shard_begin_[shard]};
}

const MetaTable& Dataset::meta_table(size_t shard) const { return metas_[shard]; }

Result<uint64_t> Dataset::GlobalIndex(uint32_t source, uint64_t index) const {
  if (source >= sources_.size() || index >= source_size(source)) {
    return Status::OutOfRange("{}: no sample {} in source {} (the dataset has {} sources)", dir_,
                              index, source, sources_.size());
  }
  const std::vector<uint64_t>& begin = source_shard_begin_[source];
  const size_t k = std::upper_bound(begin.begin(), begin.end(), index) - begin.begin() - 1;
  return shard_begin_[source_shards_[source][k]] + (index - begin[k]);
}

const SampleMeta& Dataset::meta(uint64_t i) const {
  auto [shard, local] = Locate(i);
  return metas_[shard].sample(local);
}

std::span<const MediaMeta> Dataset::media_meta(uint64_t i) const {
  auto [shard, local] = Locate(i);
  return metas_[shard].media_of(local);
}

uint32_t Dataset::source_of(uint64_t i) const { return shard_source_[Locate(i).first]; }

Result<const Dataset::ShardFiles*> Dataset::Files(size_t shard) const {
  ShardFiles& files = *files_[shard];
  std::call_once(files.once, [&] {
    files.status = [&]() -> Status {
      const std::string base = dir_ + "/" + manifest_.shards[shard].stem;
      MMPT_ASSIGN_OR_RETURN(files.jsonl, MappedFile::Open(base + ".jsonl"));
      MMPT_ASSIGN_OR_RETURN(files.idx_file, MappedFile::Open(base + ".jsonl.idx"));
      MMPT_ASSIGN_OR_RETURN(files.index,
                            LineIndex::FromBytes(files.idx_file.bytes(), files.jsonl.size_bytes(),
                                                 base + ".jsonl.idx"));
      if (files.index.size() != metas_[shard].num_samples()) {
        return Status::Corrupt("{}.jsonl.idx: {} lines where .meta has {} samples", base,
                               files.index.size(), metas_[shard].num_samples());
      }
      MMPT_ASSIGN_OR_RETURN(files.zip, MappedFile::Open(base + ".zip"));
      MMPT_ASSIGN_OR_RETURN(files.tok, MappedFile::Open(base + ".tok"));
      if (files.tok.size_bytes() != metas_[shard].num_tokens() * sizeof(int32_t)) {
        return Status::Corrupt("{}.tok: {} bytes where .meta has {} tokens", base,
                               files.tok.size_bytes(), metas_[shard].num_tokens());
      }
      return Status::OK();
    }();
  });
  if (!files.status.ok()) return files.status;
  return &files;
}

Result<std::string_view> Dataset::Line(uint64_t i) const {
  if (i >= num_samples()) {
    return Status::OutOfRange("{}: sample {} of {}", dir_, i, num_samples());
  }
  auto [shard, local] = Locate(i);
  MMPT_ASSIGN_OR_RETURN(const ShardFiles* files, Files(shard));
  return LineAt(files->jsonl.text(), files->index, local);
}

std::string Dataset::Where(uint64_t i) const {
  auto [shard, local] = Locate(i);
  return fmt::format("{}/{}.jsonl:{}", dir_, manifest_.shards[shard].stem, local + 1);
}

Status Dataset::ReadSample(uint64_t i, SampleView& out) const {
  MMPT_ASSIGN_OR_RETURN(std::string_view line, Line(i));
  return ParseSample(i, line, out);
}

Status Dataset::ParseSample(uint64_t i, std::string_view line, SampleView& out) const {
  if (i >= num_samples()) {
    return Status::OutOfRange("{}: sample {} of {}", dir_, i, num_samples());
  }
  auto [shard, local] = Locate(i);
  Status status = ReadSampleLine(line, out);
  if (status.ok()) {
    status =
        CheckSampleAgainstMeta(out, metas_[shard].sample(local), metas_[shard].media_of(local));
  }
  if (!status.ok()) return Status::Corrupt("{}: {}", Where(i), status.message());
  return Status::OK();
}

Result<std::span<const int32_t>> Dataset::Tokens(uint64_t i) const {
  if (i >= num_samples()) {
    return Status::OutOfRange("{}: sample {} of {}", dir_, i, num_samples());
  }
  auto [shard, local] = Locate(i);
  MMPT_ASSIGN_OR_RETURN(const ShardFiles* files, Files(shard));
  const SampleMeta& s = metas_[shard].sample(local);
  const auto* ids = reinterpret_cast<const int32_t*>(files->tok.bytes().data());
  return std::span<const int32_t>(ids + s.token_begin, s.text_tokens);
}

Result<std::span<const std::byte>> Dataset::Media(uint64_t i, size_t k) const {
  if (i >= num_samples()) {
    return Status::OutOfRange("{}: sample {} of {}", dir_, i, num_samples());
  }
  auto [shard, local] = Locate(i);
  std::span<const MediaMeta> items = metas_[shard].media_of(local);
  if (k >= items.size()) {
    return Status::OutOfRange("{}: sample {} has {} media items, asked for {}", dir_, i,
                              items.size(), k);
  }
  MMPT_ASSIGN_OR_RETURN(const ShardFiles* files, Files(shard));
  const MediaMeta& m = items[k];
  std::span<const std::byte> zip = files->zip.bytes();
  if (m.data_offset > zip.size() || m.data_size > zip.size() - m.data_offset) {
    return Status::Corrupt(
        "{}/{}.zip: media {} of sample {} at [{}, +{}) is past the zip's {} "
        "bytes",
        dir_, manifest_.shards[shard].stem, k, i, m.data_offset, m.data_size, zip.size());
  }
  return zip.subspan(m.data_offset, m.data_size);
}

}  // namespace mmpt::store
