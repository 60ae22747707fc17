#include "mmpt/pack/refill.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace mmpt::pack {
namespace {

// Spare items by (tokens, index); lookups return the largest entry under a token limit.
using SpareSet = std::set<std::pair<uint32_t, uint32_t>>;

// The largest spare item with lo < tokens ≤ hi whose images fit `image_room`; at most a few
// candidates are inspected, so a rare image limit cannot make this linear.
SpareSet::iterator Largest(SpareSet& spare, std::span<const PackItem> items, uint32_t lo,
                           uint32_t hi, uint32_t image_room) {
  auto it = spare.upper_bound({hi, UINT32_MAX});
  for (int tries = 0; tries < 8 && it != spare.begin(); ++tries) {
    --it;
    if (it->first <= lo) break;
    if (items[it->second].images <= image_room) return it;
  }
  return spare.end();
}

}  // namespace

RefillStats RefillFromSpare(std::span<const PackItem> items, const PackConstraints& c,
                            std::span<const uint8_t> locked, std::vector<std::vector<uint32_t>>* packs,
                            std::vector<uint32_t>* spare) {
  RefillStats stats;
  SpareSet pool;
  for (uint32_t i : *spare) pool.emplace(items[i].tokens, i);
  const uint32_t max_images = c.max_images == 0 ? UINT32_MAX : c.max_images;
  std::vector<uint32_t> tokens(packs->size(), 0), images(packs->size(), 0);
  for (size_t p = 0; p < packs->size(); ++p) {
    for (uint32_t i : (*packs)[p]) {
      tokens[p] += items[i].tokens;
      images[p] += items[i].images;
    }
  }
  std::vector<uint32_t> order(packs->size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return tokens[a] < tokens[b]; });
  for (uint32_t p : order) {
    auto& pack = (*packs)[p];
    for (int round = 0; round < 4 && !pool.empty() && tokens[p] < c.seq_len; ++round) {
      bool changed = false;
      // Add the largest spare items that fit.
      while (tokens[p] < c.seq_len && (c.max_samples == 0 || pack.size() < c.max_samples)) {
        auto it = Largest(pool, items, 0, c.seq_len - tokens[p], max_images - images[p]);
        if (it == pool.end()) break;
        uint32_t i = it->second;
        pool.erase(it);
        pack.push_back(i);
        tokens[p] += items[i].tokens;
        images[p] += items[i].images;
        ++stats.added;
        changed = true;
      }
      // Exchange one item for the largest spare item that fits in its place.
      uint32_t room = c.seq_len - tokens[p];
      if (room == 0) break;
      size_t best_k = pack.size();
      uint32_t best_gain = 0;
      SpareSet::iterator best_it = pool.end();
      for (size_t k = 0; k < pack.size(); ++k) {
        const PackItem& a = items[pack[k]];
        if (!locked.empty() && locked[pack[k]]) continue;
        auto it = Largest(pool, items, a.tokens, a.tokens + room, max_images - images[p] + a.images);
        if (it == pool.end()) continue;
        uint32_t gain = it->first - a.tokens;
        if (gain > best_gain) {
          best_gain = gain;
          best_k = k;
          best_it = it;
        }
      }
      if (best_it != pool.end()) {
        uint32_t in = best_it->second, out = pack[best_k];
        pool.erase(best_it);
        pool.emplace(items[out].tokens, out);
        pack[best_k] = in;
        tokens[p] += items[in].tokens - items[out].tokens;
        images[p] = images[p] + items[in].images - items[out].images;
        ++stats.swapped;
        changed = true;
      }
      if (!changed) break;
    }
  }
  spare->clear();
  for (const auto& [t, i] : pool) spare->push_back(i);
  std::sort(spare->begin(), spare->end());
  return stats;
}

}  // namespace mmpt::pack
