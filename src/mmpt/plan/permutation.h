#pragma once

#include <cstdint>

#include "mmpt/core/hash.h"  // Mix64

namespace mmpt::plan {

/// A seeded pseudo-random permutation of [0, n) in O(1) memory: a 4-round Feistel network on
/// the smallest even bit width covering n, with cycle walking for values ≥ n (fewer than 4
/// rounds of walking on average). At(i) for every i in [0, n) yields every value exactly once.
/// Deterministic across machines (integer arithmetic only). Thread safety: immutable.
class Permutation {
 public:
  /// Permute [0, n) under `key` (n ≥ 1; n = 0 makes an empty permutation).
  Permutation(uint64_t n, uint64_t key);

  uint64_t size() const { return n_; }
  /// The i-th element of the permuted order, i < size().
  uint64_t At(uint64_t i) const;
  /// Where `value` (< size()) stands in the permuted order: At(Inverse(value)) == value.
  uint64_t Inverse(uint64_t value) const;

 private:
  uint64_t Round(uint64_t half, int round) const;

  uint64_t n_;
  uint64_t keys_[4];
  int half_bits_;
  uint64_t half_mask_;
};

}  // namespace mmpt::plan
