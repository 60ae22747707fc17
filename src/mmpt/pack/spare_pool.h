#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "mmpt/pack/packer.h"

namespace mmpt::pack {

/// The spare items of a refill (those left out of a step's packs), indexed by token count so
/// that "the largest spare item" and "the spare pair with the largest token sum" within a token
/// range are found in O(range / 64) word steps rather than by enumerating items or pairs.
///
/// Items are bucketed by tokens (one bucket per value in [1, max_tokens]); a bitset marks the
/// non-empty buckets, and a second bitset over sums in [1, max_tokens] marks the sums that
/// some pair of distinct spare items (two different values, or two items of one value) reaches,
/// with a count per sum kept up to date on every Add/Remove: O(distinct values) when a value's
/// count crosses 0↔1 (or 1↔2), O(log bucket) otherwise.
///
/// Deterministic: lookups return the lowest-index item of the chosen value; among pairs of one
/// sum, the one with the smallest lower value. Not thread-safe.
class SparePool {
 public:
  /// `items` is borrowed (must outlive the pool). Items with tokens above `max_tokens` are
  /// never looked up (they cannot fit anywhere) but are kept and returned by Items().
  /// `index_pairs` false skips the pair index (LargestPair then finds nothing): it costs
  /// O(distinct values²) to build, too much for a spare of tens of thousands of sizes.
  SparePool(std::span<const PackItem> items, uint32_t max_tokens, bool index_pairs = true);

  /// Take item `i` into the pool / out of it. `i` must not be / must be in the pool.
  void Add(uint32_t i);
  void Remove(uint32_t i);

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  /// The largest item with lo < tokens ≤ hi and images ≤ image_room (lowest index among
  /// equals), or nullopt. At most a few values are inspected for the image limit, so a rare
  /// limit cannot make this linear; a miss is then possible but never a wrong answer.
  std::optional<uint32_t> Largest(uint32_t lo, uint32_t hi, uint32_t image_room) const;

  /// Two distinct items with lo < tokens sum ≤ hi and images sum ≤ image_room, the largest sum
  /// first, or nullopt. Same bounded search as Largest.
  std::optional<std::pair<uint32_t, uint32_t>> LargestPair(uint32_t lo, uint32_t hi,
                                                           uint32_t image_room) const;

  /// Every item in the pool, ascending by index.
  std::vector<uint32_t> Items() const;

  /// The largest set bit of `bits` at a position p with lo < p ≤ hi, or 0 if none; `bits`
  /// must cover hi. O((hi − lo) / 64).
  static uint32_t PrevSet(const std::vector<uint64_t>& bits, uint32_t lo, uint32_t hi);

 private:
  // A value's availability for pairs changed: update the pair counts of every sum it forms.
  void UpdatePairs(uint32_t value, int delta);
  // An item of value v (lowest index first) with images ≤ image_room, skipping `except`.
  std::optional<uint32_t> ItemOf(uint32_t v, uint32_t image_room,
                                 std::optional<uint32_t> except) const;

  std::span<const PackItem> items_;
  uint32_t max_tokens_;
  bool index_pairs_;
  size_t size_ = 0;
  // Per token value, its items' indices sorted descending (the lowest index at the back).
  std::vector<std::vector<uint32_t>> buckets_;
  std::vector<uint64_t> values_;      // bit v: buckets_[v] is non-empty
  std::vector<uint32_t> pair_count_;  // per sum: value pairs {b ≤ c} available with b + c = sum
  std::vector<uint64_t> pair_sums_;   // bit s: pair_count_[s] > 0
  std::vector<uint32_t> oversize_;    // items above max_tokens
};

}  // namespace mmpt::pack
