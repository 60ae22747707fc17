#include "mmpt/plan/permutation.h"

#include <bit>

namespace mmpt::plan {

Permutation::Permutation(uint64_t n, uint64_t key) : n_(n) {
  int bits = n <= 4 ? 2 : static_cast<int>(std::bit_width(n - 1));
  half_bits_ = (bits + 1) / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  uint64_t k = key;
  for (uint64_t& round_key : keys_) {
    k = Mix64(k);
    round_key = k;
  }
}

uint64_t Permutation::Round(uint64_t half, int round) const {
  // One multiply-xorshift round: enough mixing for a shuffle, and cheap.
  uint64_t x = (half ^ keys_[round]) * 0x9e3779b97f4a7c15ULL;
  return (x ^ (x >> 29)) >> (64 - half_bits_);
}

uint64_t Permutation::At(uint64_t i) const {
  uint64_t x = i;
  do {
    uint64_t left = x >> half_bits_, right = x & half_mask_;
    for (int r = 0; r < 4; ++r) {
      uint64_t next = left ^ Round(right, r);
      left = right;
      right = next;
    }
    x = (left << half_bits_) | right;
  } while (x >= n_);  // cycle walking: stays a bijection on [0, n)
  return x;
}

uint64_t Permutation::Inverse(uint64_t value) const {
  uint64_t x = value;
  do {
    uint64_t left = x >> half_bits_, right = x & half_mask_;
    for (int r = 3; r >= 0; --r) {  // each round undone, the last first
      uint64_t previous = right ^ Round(left, r);
      right = left;
      left = previous;
    }
    x = (left << half_bits_) | right;
  } while (x >= n_);  // the cycle walked back
  return x;
}

}  // namespace mmpt::plan
