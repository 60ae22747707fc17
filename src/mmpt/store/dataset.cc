#include "mmpt/store/dataset.h"

#include <algorithm>
#include <list>
#include <tuple>
#include <unordered_map>

#include "mmpt/core/mapped_file.h"
#include "mmpt/store/jsonl_index.h"
#include "mmpt/store/sample_reader.h"

namespace mmpt::store {

// An open shard: its `.meta`, checked when opened, and its data files, mapped on first read.
struct StoredSample::Shard {
  std::string base;  // DIR/STEM
  MetaTable meta;
  struct Files {
    MappedFile jsonl;
    MappedFile idx_file;
    LineIndex index;
    MappedFile zip;
    MappedFile tok;
  };
  mutable std::once_flag once;
  mutable Status status;
  mutable Files files;

  Result<const Files*> Read() const {
    std::call_once(once, [&] { status = MapFiles(); });
    if (!status.ok()) return status;
    return &files;
  }

 private:
  Status MapFiles() const {
    MMPT_ASSIGN_OR_RETURN(files.jsonl, MappedFile::Open(base + ".jsonl"));
    MMPT_ASSIGN_OR_RETURN(files.idx_file, MappedFile::Open(base + ".jsonl.idx"));
    MMPT_ASSIGN_OR_RETURN(files.index,
                          LineIndex::FromBytes(files.idx_file.bytes(), files.jsonl.size_bytes(),
                                               base + ".jsonl.idx"));
    if (files.index.size() != meta.num_samples()) {
      return Status::Corrupt("{}.jsonl.idx: {} lines where .meta has {} samples", base,
                             files.index.size(), meta.num_samples());
    }
    MMPT_ASSIGN_OR_RETURN(files.zip, MappedFile::Open(base + ".zip"));
    MMPT_ASSIGN_OR_RETURN(files.tok, MappedFile::Open(base + ".tok"));
    if (files.tok.size_bytes() != meta.num_tokens() * sizeof(int32_t)) {
      return Status::Corrupt("{}.tok: {} bytes where .meta has {} tokens", base,
                             files.tok.size_bytes(), meta.num_tokens());
    }
    return Status::OK();
  }
};

// The open shards, least recently used last; a shard past the capacity is dropped from it,
// and closed once no StoredSample holds it.
class Dataset::ShardCache {
 public:
  explicit ShardCache(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

  std::shared_ptr<const StoredSample::Shard> Find(size_t shard) {
    std::lock_guard lock(mutex_);
    auto it = where_.find(shard);
    if (it == where_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }
  // `opened` unless another thread opened the shard meanwhile (then that one).
  std::shared_ptr<const StoredSample::Shard> Insert(
      size_t shard, std::shared_ptr<const StoredSample::Shard> opened) {
    std::lock_guard lock(mutex_);
    auto [it, inserted] = where_.try_emplace(shard);
    if (!inserted) {
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    order_.emplace_front(shard, std::move(opened));
    it->second = order_.begin();
    while (order_.size() > capacity_) {
      where_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }
  size_t size() const {
    std::lock_guard lock(mutex_);
    return order_.size();
  }

 private:
  using Entry = std::pair<size_t, std::shared_ptr<const StoredSample::Shard>>;
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> order_;
  std::unordered_map<size_t, std::list<Entry>::iterator> where_;
};

Dataset::~Dataset() = default;
Dataset::Dataset(Dataset&&) noexcept = default;
Dataset& Dataset::operator=(Dataset&&) noexcept = default;

Result<Dataset> Dataset::Open(const std::string& dir, size_t open_shards) {
  MMPT_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(dir, ShardList::kSkip));
  return Open(dir, std::move(manifest), open_shards);
}

Result<Dataset> Dataset::Open(const std::string& dir, Manifest manifest, size_t open_shards) {
  Dataset dataset;
  dataset.dir_ = dir;
  MMPT_ASSIGN_OR_RETURN(dataset.shards_, ShardTable::Open(dir, manifest));
  dataset.manifest_ = std::move(manifest);
  dataset.manifest_.source_counts = dataset.manifest_.Counts();
  dataset.manifest_.shards = {};  // the table holds them
  dataset.sources_ = dataset.manifest_.sources();
  dataset.source_shards_.resize(dataset.sources_.size());
  dataset.source_shard_begin_.resize(dataset.sources_.size(), std::vector<uint64_t>{0});
  const ShardTable& shards = dataset.shards_;
  dataset.shard_begin_.reserve(shards.size() + 1);
  dataset.shard_begin_.push_back(0);
  for (size_t shard = 0; shard < shards.size(); ++shard) {
    const uint64_t samples = shards.samples(shard);
    dataset.shard_begin_.push_back(dataset.shard_begin_.back() + samples);
    const uint32_t source = shards.source(shard);
    dataset.source_shards_[source].push_back(shard);
    dataset.source_shard_begin_[source].push_back(dataset.source_shard_begin_[source].back() +
                                                  samples);
  }
  dataset.cache_ = std::make_unique<ShardCache>(open_shards);
  return dataset;
}

Result<std::shared_ptr<const StoredSample::Shard>> Dataset::OpenShard(size_t shard) const {
  if (auto open = cache_->Find(shard)) return open;
  auto opened = std::make_shared<StoredSample::Shard>();
  opened->base = fmt::format("{}/{}", dir_, shards_.stem(shard));
  const std::string path = opened->base + ".meta";
  MMPT_ASSIGN_OR_RETURN(opened->meta, MetaTable::Open(path));
  const MetaTable& table = opened->meta;
  if (table.num_samples() != shards_.samples(shard) || table.num_media() != shards_.media(shard) ||
      table.num_tokens() != shards_.tokens(shard)) {
    return Status::Corrupt("{}: {} samples, {} media, {} tokens where the manifest says {}, {}, {}",
                           path, table.num_samples(), table.num_media(), table.num_tokens(),
                           shards_.samples(shard), shards_.media(shard), shards_.tokens(shard));
  }
  return cache_->Insert(shard, std::move(opened));
}

Result<StoredSample> Dataset::Sample(uint64_t i) const {
  if (i >= num_samples()) {
    return Status::OutOfRange("{}: sample {} of {}", dir_, i, num_samples());
  }
  StoredSample out;
  size_t shard;
  std::tie(shard, out.local_) = Locate(i);
  out.index_ = i;
  MMPT_ASSIGN_OR_RETURN(out.shard_, OpenShard(shard));
  return out;
}

Result<std::shared_ptr<const MetaTable>> Dataset::MetaOf(size_t shard) const {
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<const StoredSample::Shard> open, OpenShard(shard));
  const MetaTable* meta = &open->meta;
  return std::shared_ptr<const MetaTable>(std::move(open), meta);
}

size_t Dataset::open_shards() const { return cache_->size(); }

std::pair<size_t, uint64_t> Dataset::Locate(uint64_t i) const {
  size_t shard =
      std::upper_bound(shard_begin_.begin(), shard_begin_.end(), i) - shard_begin_.begin() - 1;
  return {shard, i - shard_begin_[shard]};
}

Result<uint64_t> Dataset::GlobalIndex(uint32_t source, uint64_t index) const {
  if (source >= sources_.size() || index >= source_size(source)) {
    return Status::OutOfRange("{}: no sample {} in source {} (the dataset has {} sources)", dir_,
                              index, source, sources_.size());
  }
  const std::vector<uint64_t>& begin = source_shard_begin_[source];
  const size_t k = std::upper_bound(begin.begin(), begin.end(), index) - begin.begin() - 1;
  return shard_begin_[source_shards_[source][k]] + (index - begin[k]);
}

const SampleMeta& StoredSample::meta() const { return shard_->meta.sample(local_); }

std::span<const MediaMeta> StoredSample::media() const { return shard_->meta.media_of(local_); }

std::string StoredSample::Where() const {
  return fmt::format("{}.jsonl:{}", shard_->base, local_ + 1);
}

Result<std::string_view> StoredSample::Line() const {
  MMPT_ASSIGN_OR_RETURN(const Shard::Files* files, shard_->Read());
  return LineAt(files->jsonl.text(), files->index, local_);
}

Status StoredSample::Read(SampleView& out) const {
  MMPT_ASSIGN_OR_RETURN(std::string_view line, Line());
  return Parse(line, out);
}

Status StoredSample::Parse(std::string_view line, SampleView& out) const {
  Status status = ReadSampleLine(line, out);
  if (status.ok()) status = CheckSampleAgainstMeta(out, meta(), media());
  if (!status.ok()) return Status::Corrupt("{}: {}", Where(), status.message());
  return Status::OK();
}

Result<std::span<const int32_t>> StoredSample::Tokens() const {
  MMPT_ASSIGN_OR_RETURN(const Shard::Files* files, shard_->Read());
  const SampleMeta& s = meta();
  const auto* ids = reinterpret_cast<const int32_t*>(files->tok.bytes().data());
  return std::span<const int32_t>(ids + s.token_begin, s.text_tokens);
}

Result<std::span<const std::byte>> StoredSample::Media(size_t k) const {
  std::span<const MediaMeta> items = media();
  if (k >= items.size()) {
    return Status::OutOfRange("{}: {} media items, asked for {}", Where(), items.size(), k);
  }
  MMPT_ASSIGN_OR_RETURN(const Shard::Files* files, shard_->Read());
  const MediaMeta& m = items[k];
  std::span<const std::byte> zip = files->zip.bytes();
  if (m.data_offset > zip.size() || m.data_size > zip.size() - m.data_offset) {
    return Status::Corrupt("{}.zip: media {} of sample {} at [{}, +{}) is past the zip's {} bytes",
                           shard_->base, k, index_, m.data_offset, m.data_size, zip.size());
  }
  return zip.subspan(m.data_offset, m.data_size);
}

}  // namespace mmpt::store
