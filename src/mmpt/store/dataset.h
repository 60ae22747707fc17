#pragma once

// Random access to a prepared dataset: metadata, canonical samples, token ids and media bytes
// by global sample index, all read through mmap without copies, from a bounded set of open
// shards.

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/manifest.h"
#include "mmpt/store/meta.h"
#include "mmpt/store/sample_view.h"

namespace mmpt::store {

class Dataset;

/// Sample `i` of a Dataset as stored, its shard held open: every view it gives (and those a
/// SampleView it reads takes) stays valid while it, or a copy, lives. Thread safety:
/// immutable, safe to share; all methods may be called concurrently.
class StoredSample {
 public:
  uint64_t index() const { return index_; }
  /// Its planning facts (no parsing) and media records, in segment order.
  const SampleMeta& meta() const;
  std::span<const MediaMeta> media() const;
  /// Where it is stored, for messages: "DIR/STEM.jsonl:LINE".
  std::string Where() const;
  /// Its canonical JSON line (without '\n'), a view into the mapped `.jsonl`. Errors: IOError
  /// or Corrupt for a shard file that cannot be opened or checked.
  Result<std::string_view> Line() const;
  /// Read it into `out` (SampleView: its strings point into the mapped `.jsonl`, except those
  /// spelled with escapes, which `out` holds); reuses `out`'s capacity, so a loop over one view
  /// allocates nothing once warm. The line is parsed strictly (ReadSampleLine) and checked
  /// against `.meta`. For a sample to keep, use `out.ToSample()`. Errors: as Line, plus
  /// Corrupt naming the shard's `.jsonl` and line for a line that does not parse or disagrees
  /// with `.meta`; `out` is then unspecified.
  Status Read(SampleView& out) const;
  /// Read of `line`, its line read elsewhere (another peer's shard, sent by the exchange):
  /// parsed strictly and checked against this dataset's `.meta`. Errors: as Read.
  Status Parse(std::string_view line, SampleView& out) const;
  /// The token ids rendered through the manifest's chat template (image pads left out; the
  /// media's text positions say where they go), as a view into `.tok`.
  Result<std::span<const int32_t>> Tokens() const;
  /// The bytes of media record `k`, a view into the mapped zip (empty for a metadata-only item).
  /// Errors: OutOfRange, Corrupt if the range leaves the zip.
  Result<std::span<const std::byte>> Media(size_t k) const;

 private:
  friend class Dataset;
  struct Shard;
  std::shared_ptr<const Shard> shard_;
  uint64_t index_ = 0;  // in the dataset
  uint64_t local_ = 0;  // in the shard
};

/// How many shards a Dataset holds open at most, besides those a StoredSample or
/// Dataset::MetaOf still holds: each open shard maps up to five files, and a process may hold
/// only so many mappings (Linux's vm.max_map_count, 65,530 by default).
inline constexpr size_t kDefaultOpenShards = 4096;

/// A prepared dataset opened for reading. Samples are numbered 0..num_samples()-1 in manifest
/// shard order. Open reads the manifest and maps its shard table (ShardTable), so it takes the
/// same time for any number of samples and holds 24 bytes a shard; a shard's `.meta` is mapped and
/// checked against the shard table when one of its samples is first asked for, its `.jsonl`,
/// `.jsonl.idx`, `.zip` and `.tok` when first read. At most `open_shards` shards stay open, the
/// least recently used closed first: what a rank holds does not grow with the corpus it reads.
/// Thread safety: all const methods may be called concurrently.
class Dataset {
 public:
  ~Dataset();
  Dataset(Dataset&&) noexcept;
  Dataset& operator=(Dataset&&) noexcept;

  /// Open the dataset in `dir`. Errors: NotFound (no manifest), Corrupt, IOError.
  static Result<Dataset> Open(const std::string& dir, size_t open_shards = kDefaultOpenShards);
  /// Open the dataset in `dir` whose shards `manifest` lists (read already, or not yet written:
  /// store::FinishDataset). Errors: as Open.
  static Result<Dataset> Open(const std::string& dir, Manifest manifest,
                              size_t open_shards = kDefaultOpenShards);

  const std::string& dir() const { return dir_; }
  /// Its settings and sources (its shards are shards()).
  const Manifest& manifest() const { return manifest_; }
  const ShardTable& shards() const { return shards_; }
  uint64_t num_samples() const { return shard_begin_.back(); }
  size_t num_shards() const { return shards_.size(); }
  /// Sources in order of first appearance; source_of() indexes this list.
  const std::vector<std::string>& sources() const { return sources_; }

  /// Shard holding global sample `i` and the index within it; `i` < num_samples() (unchecked).
  std::pair<size_t, uint64_t> Locate(uint64_t i) const;
  /// Global index of the first sample of `shard`.
  uint64_t shard_begin(size_t shard) const { return shard_begin_[shard]; }
  /// The source of `shard` (an index into sources()).
  uint32_t shard_source(size_t shard) const { return shards_.source(shard); }
  /// Samples of source `source` (an index into sources()).
  uint64_t source_size(uint32_t source) const { return source_shard_begin_[source].back(); }
  /// The shards of source `source`, in manifest order.
  std::span<const size_t> source_shards(uint32_t source) const { return source_shards_[source]; }
  /// Global index of sample `index` of source `source`, counting a source's samples through
  /// its shards in manifest order: the planner's numbering (store::BuildPlanningTable).
  /// Errors: OutOfRange naming the source and index.
  Result<uint64_t> GlobalIndex(uint32_t source, uint64_t index) const;
  uint32_t source_of(uint64_t i) const { return shard_source(Locate(i).first); }

  /// Sample `i`, its shard opened if it is not. Errors: OutOfRange; NotFound, IOError or
  /// Corrupt for a `.meta` that cannot be read, fails validation or disagrees with the shard
  /// table's counts.
  Result<StoredSample> Sample(uint64_t i) const;
  /// The `.meta` table of `shard` (< num_shards()), held open while the pointer lives.
  /// Errors: as Sample.
  Result<std::shared_ptr<const MetaTable>> MetaOf(size_t shard) const;
  /// Shards open now (at most the open_shards given to Open, besides those held).
  size_t open_shards() const;

 private:
  class ShardCache;
  Dataset() = default;
  Result<std::shared_ptr<const StoredSample::Shard>> OpenShard(size_t shard) const;

  std::string dir_;
  Manifest manifest_;
  ShardTable shards_;
  std::vector<std::string> sources_;
  /// Per source: its shards in manifest order, and the source-local index of each one's first
  /// sample (one more entry: the source's sample count).
  std::vector<std::vector<size_t>> source_shards_;
  std::vector<std::vector<uint64_t>> source_shard_begin_;
  std::vector<uint64_t> shard_begin_;  // num_shards + 1 prefix sums
  std::unique_ptr<ShardCache> cache_;
};

}  // namespace mmpt::store
