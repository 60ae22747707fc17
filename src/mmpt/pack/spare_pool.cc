#include "mmpt/pack/spare_pool.h"

#include <algorithm>
#include <bit>
#include <functional>

namespace mmpt::pack {
namespace {

// Values inspected per lookup when an image limit rules candidates out.
constexpr int kImageTries = 8;

void SetBit(std::vector<uint64_t>& bits, uint32_t p, bool on) {
  uint64_t mask = uint64_t{1} << (p & 63);
  if (on) {
    bits[p >> 6] |= mask;
  } else {
    bits[p >> 6] &= ~mask;
  }
}

bool TestBit(const std::vector<uint64_t>& bits, uint32_t p) {
  return (bits[p >> 6] >> (p & 63)) & 1;
}

}  // namespace

SparePool::SparePool(std::span<const PackItem> items, uint32_t max_tokens, bool index_pairs)
    : items_(items),
      max_tokens_(max_tokens),
      index_pairs_(index_pairs),
      buckets_(size_t{max_tokens} + 1),
      values_((size_t{max_tokens} + 64) / 64, 0),
      pair_count_(size_t{max_tokens} + 1, 0),
      pair_sums_((size_t{max_tokens} + 64) / 64, 0) {}

uint32_t SparePool::PrevSet(const std::vector<uint64_t>& bits, uint32_t lo, uint32_t hi) {
  if (hi <= lo) return 0;
  uint32_t w = hi >> 6;
  uint32_t bit = hi & 63;
  uint64_t word = bits[w] & (bit == 63 ? ~uint64_t{0} : (uint64_t{2} << bit) - 1);
  while (true) {
    if (word != 0) {
      uint32_t p = w * 64 + 63 - static_cast<uint32_t>(std::countl_zero(word));
      return p > lo ? p : 0;
    }
    // Positions in word w - 1 are below w × 64; none is above lo once w × 64 ≤ lo + 1.
    if (w == 0 || uint64_t{w} * 64 <= uint64_t{lo} + 1) return 0;
    --w;
    word = bits[w];
  }
}

void SparePool::UpdatePairs(uint32_t value, int delta) {
  if (!index_pairs_) return;
  // Every other available value u with u + value ≤ max_tokens forms a pair sum.
  uint32_t limit = max_tokens_ - value;
  for (uint32_t w = 0; uint64_t{w} * 64 <= limit; ++w) {
    uint64_t word = values_[w];
    while (word != 0) {
      uint32_t u = w * 64 + static_cast<uint32_t>(std::countr_zero(word));
      word &= word - 1;
      if (u > limit) break;
      if (u == value) continue;
      uint32_t s = u + value;
      pair_count_[s] = static_cast<uint32_t>(static_cast<int64_t>(pair_count_[s]) + delta);
      SetBit(pair_sums_, s, pair_count_[s] != 0);
    }
  }
}

void SparePool::Add(uint32_t i) {
  ++size_;
  uint32_t v = items_[i].tokens;
  if (v == 0 || v > max_tokens_) {
    oversize_.push_back(i);
    return;
  }
  auto& bucket = buckets_[v];
  bucket.insert(std::upper_bound(bucket.begin(), bucket.end(), i, std::greater<>()), i);
  if (bucket.size() == 1) {
    SetBit(values_, v, true);
    UpdatePairs(v, +1);
  } else if (bucket.size() == 2 && index_pairs_ && 2 * uint64_t{v} <= max_tokens_) {
    if (++pair_count_[2 * v] == 1) SetBit(pair_sums_, 2 * v, true);
  }
}

void SparePool::Remove(uint32_t i) {
  --size_;
  uint32_t v = items_[i].tokens;
  if (v == 0 || v > max_tokens_) {
    oversize_.erase(std::find(oversize_.begin(), oversize_.end(), i));
    return;
  }
  auto& bucket = buckets_[v];
  bucket.erase(std::lower_bound(bucket.begin(), bucket.end(), i, std::greater<>()));
  if (bucket.empty()) {
    SetBit(values_, v, false);
    UpdatePairs(v, -1);
  } else if (bucket.size() == 1 && index_pairs_ && 2 * uint64_t{v} <= max_tokens_) {
    if (--pair_count_[2 * v] == 0) SetBit(pair_sums_, 2 * v, false);
  }
}

std::optional<uint32_t> SparePool::ItemOf(uint32_t v, uint32_t image_room,
                                          std::optional<uint32_t> except) const {
  const auto& bucket = buckets_[v];
  int tries = 0;
  for (auto it = bucket.rbegin(); it != bucket.rend() && tries < kImageTries; ++it, ++tries) {
    if (except && *it == *except) continue;
    if (items_[*it].images <= image_room) return *it;
  }
  return std::nullopt;
}

std::optional<uint32_t> SparePool::Largest(uint32_t lo, uint32_t hi, uint32_t image_room) const {
  hi = std::min(hi, max_tokens_);
  for (int tries = 0; tries < kImageTries; ++tries) {
    uint32_t v = PrevSet(values_, lo, hi);
    if (v == 0) return std::nullopt;
    if (auto item = ItemOf(v, image_room, std::nullopt)) return item;
    hi = v - 1;
  }
  return std::nullopt;
}

std::optional<std::pair<uint32_t, uint32_t>> SparePool::LargestPair(uint32_t lo, uint32_t hi,
                                                                    uint32_t image_room) const {
  hi = std::min(hi, max_tokens_);
  int tries = 0;
  for (uint32_t s = PrevSet(pair_sums_, lo, hi); s != 0; s = PrevSet(pair_sums_, lo, s - 1)) {
    // The pairs {b ≤ c} of sum s, smallest b first.
    uint32_t b_min = s > max_tokens_ ? s - max_tokens_ : 1;
    for (uint32_t b = b_min; b <= s / 2; ++b) {
      uint32_t w = b >> 6;
      uint64_t word = values_[w] >> (b & 63);
      if (word == 0) {  // skip to the next word's first value
        b = (w + 1) * 64 - 1;
        continue;
      }
      b += static_cast<uint32_t>(std::countr_zero(word));
      if (b > s / 2) break;
      uint32_t c = s - b;
      if (!TestBit(values_, c) || (b == c && buckets_[b].size() < 2)) continue;
      if (++tries > kImageTries) return std::nullopt;
      std::optional<uint32_t> x = ItemOf(b, image_room, std::nullopt);
      if (!x) continue;
      std::optional<uint32_t> y = ItemOf(c, image_room - items_[*x].images, *x);
      if (y) return std::pair(std::min(*x, *y), std::max(*x, *y));
    }
  }
  return std::nullopt;
}

std::vector<uint32_t> SparePool::Items() const {
  std::vector<uint32_t> out(oversize_);
  for (const auto& bucket : buckets_) out.insert(out.end(), bucket.begin(), bucket.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mmpt::pack
