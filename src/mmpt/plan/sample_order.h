#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/plan/permutation.h"

namespace mmpt::plan {

/// Where one source's stream stands: the next position in its current epoch's permutation,
/// the epoch, and its stride-scheduling pass value.
struct SourceCursor {
  uint64_t position = 0;
  uint64_t epoch = 0;
  uint64_t pass = 0;
};

/// The global sample stream: each source walks its own seeded permutation (a new one every
/// epoch, O(1) memory), and sources are blended by weight with stride scheduling — the source
/// with the least pass value goes next (ties to the lower source id) and its pass advances by
/// a stride ∝ 1 / weight — so any window of the stream holds each source in proportion to its
/// weight, deterministically. State is a few words per source (cursors()).
/// Not thread-safe.
class SampleOrder {
 public:
  /// `source_sizes[s]` samples per source; `weights[s]` ≥ 0 (empty: proportional to size).
  /// Errors: InvalidArgument for mismatched lengths, negative or non-finite weights, or no
  /// source with both samples and a positive weight.
  static Result<SampleOrder> Create(std::span<const uint64_t> source_sizes,
                                    std::span<const double> weights, uint64_t seed);

  /// The next sample: its source and its index within the source, and where the source's
  /// stream stood (the epoch and the position in it).
  struct Draw {
    uint32_t source;
    uint64_t index;
    uint64_t epoch;
    uint64_t position;
  };
  Draw Next();
  /// Whether the stream drew `draw`'s sample before `draw` since it stood at `since` (cursors()
  /// then, no epoch of the source ago): a source's epoch holds each sample once, so only an
  /// epoch begun since can repeat one, and whether it does is the inverse of the permutation
  /// of the epoch before. O(1).
  bool DrawnSince(std::span<const SourceCursor> since, const Draw& draw) const;

  /// The fraction of draws that come from `source` (0: never drawn; no samples or weight 0).
  double Share(uint32_t source) const { return shares_[source]; }
  const std::vector<SourceCursor>& cursors() const { return cursors_; }
  /// Resume from saved cursors. Errors: InvalidArgument if the count or a position is out of
  /// range for this corpus.
  Status Restore(std::span<const SourceCursor> cursors);

 private:
  SampleOrder() = default;
  void Rebuild();
  Permutation EpochPermutation(uint32_t source, uint64_t epoch) const;
  const Permutation& PermutationOf(uint32_t source);

  std::vector<uint64_t> sizes_;
  std::vector<uint64_t> strides_;  // 0 for a source that is never drawn
  std::vector<double> shares_;     // weights normalized to sum 1
  uint64_t seed_ = 0;
  std::vector<SourceCursor> cursors_;
  std::vector<Permutation> permutations_;  // current epoch's permutation per source
  std::vector<uint64_t> permutation_epoch_;
  using Entry = std::pair<uint64_t, uint32_t>;  // (pass, source)
  std::vector<Entry> heap_;  // a min-heap: the least pass first, ties to the lower source
};

}  // namespace mmpt::plan
