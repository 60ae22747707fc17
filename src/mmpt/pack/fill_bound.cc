#include "mmpt/pack/fill_bound.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace mmpt::pack {
namespace {

// bits |= bits << shift, over positions [0, bits.size() × 64).
void OrShifted(std::vector<uint64_t>& bits, uint32_t shift) {
  const size_t words = shift / 64, offset = shift % 64;
  for (size_t w = bits.size(); w-- > words;) {
    uint64_t moved = bits[w - words] << offset;
    if (offset != 0 && w > words) moved |= bits[w - words - 1] >> (64 - offset);
    bits[w] |= moved;
  }
}

bool Test(const std::vector<uint64_t>& bits, uint32_t p) { return (bits[p / 64] >> (p % 64)) & 1; }

}  // namespace

FillBound BoundFill(std::span<const PackItem> items, uint32_t seq_len, uint64_t packs) {
  const auto start = std::chrono::steady_clock::now();
  FillBound bound;
  std::vector<uint32_t> count(size_t{seq_len} + 1, 0);
  uint64_t total = 0;
  for (const PackItem& item : items) {
    total += item.tokens;
    if (item.tokens > 0 && item.tokens <= seq_len) ++count[item.tokens];
  }
  // reachable bit s: some subset of the items sums to s (bits past seq_len are ignored).
  std::vector<uint64_t> reachable(size_t{seq_len} / 64 + 1, 0);
  reachable[0] = 1;
  for (uint32_t v = seq_len; v >= 1 && !Test(reachable, seq_len); --v) {
    const uint32_t copies = std::min(count[v], seq_len / v);
    for (uint32_t k = 0; k < copies; ++k) OrShifted(reachable, v);
  }
  uint32_t best = seq_len;
  while (!Test(reachable, best)) --best;
  bound.best_pack_tokens = best;
  bound.tokens = std::min(total, packs * best);
  const double capacity = static_cast<double>(packs) * seq_len;
  bound.efficiency = capacity > 0 ? static_cast<double>(bound.tokens) / capacity : 0;
  bound.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return bound;
}

}  // namespace mmpt::pack
