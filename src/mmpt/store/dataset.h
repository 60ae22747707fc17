#pragma once

// Random access to a prepared dataset: metadata, canonical samples, token ids and media bytes
// by global sample index, all read through mmap without copies.

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

/// A prepared dataset opened for reading. Samples are numbered 0..num_samples()-1 in manifest
/// shard order. Open reads the manifest with its shard table and maps every shard's `.meta`
/// (what each sample is checked against); a shard's `.jsonl`, `.jsonl.idx`, `.zip` and `.tok`
/// are mapped on first use. Thread safety: all const methods may
/// be called concurrently. Spans stay valid as long as the Dataset lives.
class Dataset {
 public:
  ~Dataset();
  Dataset(Dataset&&) noexcept;
  Dataset& operator=(Dataset&&) noexcept;

  /// Open the dataset in `dir`. Errors: NotFound (no manifest), Corrupt (a `.meta` that fails
  /// validation or disagrees with the manifest's counts), IOError.
  static Result<Dataset> Open(const std::string& dir);
  /// Open the dataset in `dir` whose shards `manifest` lists (read already, or not yet written:
  /// store::FinishDataset). Errors: as Open.
  static Result<Dataset> Open(const std::string& dir, Manifest manifest);

  const std::string& dir() const { return dir_; }
  const Manifest& manifest() const { return manifest_; }
  uint64_t num_samples() const { return shard_begin_.back(); }
  size_t num_shards() const { return manifest_.shards.size(); }
  /// Sources in order of first appearance; source_of() indexes this list.
  const std::vector<std::string>& sources() const { return sources_; }

  /// Shard holding global sample `i` and the index within it; `i` < num_samples() (unchecked).
  std::pair<size_t, uint64_t> Locate(uint64_t i) const;
  /// Global index of the first sample of `shard`.
  uint64_t shard_begin(size_t shard) const { return shard_begin_[shard]; }
  /// The `.meta` table of `shard`.
  const MetaTable& meta_table(size_t shard) const;
  /// The source of `shard` (an index into sources()).
  uint32_t shard_source(size_t shard) const { return shard_source_[shard]; }
  /// Samples of source `source` (an index into sources()).
  uint64_t source_size(uint32_t source) const { return source_shard_begin_[source].back(); }
  /// Global index of sample `index` of source `source`, counting a source's samples through
  /// its shards in manifest order: the planner's numbering (store::BuildPlanningTable).
  /// Errors: OutOfRange naming the source and index.
  Result<uint64_t> GlobalIndex(uint32_t source, uint64_t index) const;

  /// Planning facts of sample `i` (no parsing); `i` < num_samples() (unchecked).
  const SampleMeta& meta(uint64_t i) const;
  std::span<const MediaMeta> media_meta(uint64_t i) const;
  uint32_t source_of(uint64_t i) const;

  /// Where sample `i` is stored, for messages: "DIR/STEM.jsonl:LINE"; `i` < num_samples()
  /// (unchecked).
  std::string Where(uint64_t i) const;
  /// The canonical JSON line of sample `i` (without '\n'), a view into the mapped `.jsonl`.
  /// Errors: OutOfRange, IOError/Corrupt for a shard file that cannot be opened or checked.
  Result<std::string_view> Line(uint64_t i) const;
  /// Read sample `i` into `out` (see SampleView: its strings point into the mapped `.jsonl`,
  /// valid while this Dataset lives, except those spelled with escapes, which `out` holds);
  /// reuses `out`'s capacity, so a loop over one view allocates nothing once warm. The line is
  /// parsed strictly (ReadSampleLine) and checked against the shard's `.meta`. For a sample to
  /// keep, use `out.ToSample()`. Errors: as Line, plus Corrupt naming the shard's `.jsonl` and
  /// line for a line that does not parse or disagrees with `.meta`; `out` is then unspecified.
  Status ReadSample(uint64_t i, SampleView& out) const;
  /// ReadSample of `line`, sample `i`'s line read elsewhere (another peer's shard, sent by the
  /// exchange): parsed strictly and checked against this dataset's `.meta`. Errors: as
  /// ReadSample, OutOfRange for `i`.
  Status ParseSample(uint64_t i, std::string_view line, SampleView& out) const;
  /// The token ids of sample `i` rendered through the manifest's chat template (image pads left
  /// out; .meta's media text positions say where they go), as a view into `.tok`.
  Result<std::span<const int32_t>> Tokens(uint64_t i) const;
  /// The bytes of media item `k` of sample `i`, a view into the mapped zip (empty for a
  /// metadata-only item). Errors: OutOfRange, Corrupt if the range leaves the zip.
  Result<std::span<const std::byte>> Media(uint64_t i, size_t k) const;

 private:
  struct ShardFiles;
  Dataset() = default;
  Result<const ShardFiles*> Files(size_t shard) const;

  std::string dir_;
  Manifest manifest_;
  std::vector<std::string> sources_;
  std::vector<uint32_t> shard_source_;
  /// Per source: its shards in manifest order, and the source-local index of each one's first
  /// sample (one more entry: the source's sample count).
  std::vector<std::vector<size_t>> source_shards_;
  std::vector<std::vector<uint64_t>> source_shard_begin_;
  std::vector<uint64_t> shard_begin_;  // num_shards + 1 prefix sums
  std::vector<MetaTable> metas_;
  std::vector<std::unique_ptr<ShardFiles>> files_;
};

}  // namespace mmpt::store
