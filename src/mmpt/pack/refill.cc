#include "mmpt/pack/refill.h"

#include <algorithm>
#include <numeric>

#include "mmpt/pack/spare_pool.h"

namespace mmpt::pack {
namespace {

constexpr int kPasses = 2;
constexpr int kMaxMovesPerVisit = 8;
// Above this many distinct spare sizes the pair index (O(sizes²) to build) is skipped: single
// items then cover the token range densely anyway.
constexpr size_t kMaxPairIndexSizes = 4096;
// Loosening takes a pack's largest item out only if it is at most seq_len / this.
constexpr uint32_t kLoosenFraction = 4;

enum class MoveKind : uint8_t { kAdd1, kAdd2, kSwap11, kSwap12, kSwap21, kSwap22 };

// One candidate move on a pack: pack positions out, spare items in, and the token gain.
struct Move {
  MoveKind kind = MoveKind::kAdd1;
  uint32_t gain = 0;
  uint32_t out_count = 0;
  size_t out[2] = {0, 0};  // positions in the pack, ascending
  uint32_t in_count = 0;
  uint32_t in[2] = {0, 0};
};

// The pack's state and limits while a move is searched.
struct PackRoom {
  uint32_t tokens;   // free tokens
  uint32_t images;   // free images (UINT32_MAX - used when unlimited)
  uint64_t samples;  // free sample slots (UINT64_MAX / 2 when unlimited)
};

class MoveSearch {
 public:
  MoveSearch(std::span<const PackItem> items, const SparePool& pool, const PackRoom& room)
      : items_(items), pool_(pool), room_(room) {}

  // Consider taking `out` (pack positions, tokens and images summed) out and one spare item
  // in; keep it if it gains more than the best so far.
  void TrySingle(MoveKind kind, std::initializer_list<size_t> out, uint32_t out_tokens,
                 uint32_t out_images) {
    if (room_.samples + out.size() < 1) return;
    auto in = pool_.Largest(out_tokens + best_.gain, out_tokens + room_.tokens,
                            room_.images + out_images);
    if (in) Keep(kind, out, {*in}, items_[*in].tokens - out_tokens);
  }
  // The same with two spare items in.
  void TryPair(MoveKind kind, std::initializer_list<size_t> out, uint32_t out_tokens,
               uint32_t out_images) {
    if (room_.samples + out.size() < 2) return;
    auto in = pool_.LargestPair(out_tokens + best_.gain, out_tokens + room_.tokens,
                                room_.images + out_images);
    if (in) {
      Keep(kind, out, {in->first, in->second},
           items_[in->first].tokens + items_[in->second].tokens - out_tokens);
    }
  }
  bool full() const { return best_.gain == room_.tokens; }
  const Move& best() const { return best_; }

 private:
  void Keep(MoveKind kind, std::initializer_list<size_t> out, std::initializer_list<uint32_t> in,
            uint32_t gain) {
    best_ = Move{kind, gain};
    for (size_t k : out) best_.out[best_.out_count++] = k;
    for (uint32_t i : in) best_.in[best_.in_count++] = i;
  }

  std::span<const PackItem> items_;
  const SparePool& pool_;
  PackRoom room_;
  Move best_;
};

// Whether an item may leave its pack.
bool Movable(std::span<const uint8_t> locked, uint32_t i) { return locked.empty() || !locked[i]; }

// Loosen (RefillOptions::loosen): move each non-full pack's largest movable item to the spare
// when that item is small beside the pack (≤ seq_len / kLoosenFraction). A spare made of what
// best-fit decreasing left over holds mostly the smallest items, which rarely fit a gap; after
// this it holds every size the packs do, and each pack takes back what fits it best.
uint64_t Loosen(std::span<const PackItem> items, const PackConstraints& c,
                std::span<const uint8_t> locked, std::vector<std::vector<uint32_t>>* packs,
                std::vector<uint32_t>* spare) {
  uint64_t loosened = 0;
  for (auto& pack : *packs) {
    uint64_t tokens = 0;
    for (uint32_t i : pack) tokens += items[i].tokens;
    if (tokens >= c.seq_len || pack.size() < 2) continue;
    size_t pick = pack.size();
    for (size_t k = 0; k < pack.size(); ++k) {
      if (Movable(locked, pack[k]) &&
          (pick == pack.size() || items[pack[k]].tokens > items[pack[pick]].tokens)) {
        pick = k;
      }
    }
    if (pick == pack.size() || items[pack[pick]].tokens > c.seq_len / kLoosenFraction) continue;
    spare->push_back(pack[pick]);
    pack.erase(pack.begin() + static_cast<ptrdiff_t>(pick));
    ++loosened;
  }
  return loosened;
}

// The packs' tallies, the spare pool and the move loop.
class Refiller {
 public:
  Refiller(std::span<const PackItem> items, const PackConstraints& c,
           std::span<const uint8_t> locked, std::vector<std::vector<uint32_t>>* packs,
           SparePool* pool, RefillStats* stats)
      : items_(items),
        c_(c),
        locked_(locked),
        packs_(*packs),
        pool_(*pool),
        stats_(*stats),
        max_images_(c.max_images == 0 ? UINT32_MAX : c.max_images),
        max_samples_(c.max_samples == 0 ? UINT64_MAX / 2 : c.max_samples),
        tokens_(packs->size(), 0),
        images_(packs->size(), 0) {
    for (size_t p = 0; p < packs_.size(); ++p) {
      for (uint32_t i : packs_[p]) {
        tokens_[p] += items[i].tokens;
        images_[p] += items[i].images;
      }
    }
  }

  // Visit every pack, emptiest first (ties by index), kPasses times.
  void Run() {
    std::vector<uint32_t> order(packs_.size());
    std::iota(order.begin(), order.end(), 0);
    for (int pass = 0; pass < kPasses; ++pass) {
      std::stable_sort(order.begin(), order.end(),
                       [&](uint32_t a, uint32_t b) { return tokens_[a] < tokens_[b]; });
      for (uint32_t p : order) Improve(p);
    }
  }

  // RefillOptions::shift_gaps: one shift per short pack, emptiest first (ties by index), each
  // followed by spare moves on both packs. Holders are the short packs' items at the start
  // plus every item a shift moves; entries whose pack no longer holds the value are skipped.
  void ShiftGaps() {
    std::vector<uint32_t> order;
    for (uint32_t p = 0; p < packs_.size(); ++p) {
      if (tokens_[p] < c_.seq_len) order.push_back(p);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return tokens_[a] < tokens_[b]; });
    holders_.assign(size_t{c_.seq_len} + 1, {});
    held_.assign((size_t{c_.seq_len} + 64) / 64, 0);
    for (uint32_t p : order) {
      for (uint32_t i : packs_[p]) AddHolder(i, p);
    }
    for (uint32_t p : order) {
      if (tokens_[p] >= c_.seq_len || pool_.empty()) continue;
      Shift shift = FindShift(p);
      if (shift.gain == 0) continue;
      ApplyShift(p, shift);
      Improve(shift.q);  // gains at least shift.gain: its search covers the one FindShift ran
      Improve(p);
    }
  }

 private:
  // Apply the best move to pack p while one gains, at most kMaxMovesPerVisit times.
  void Improve(uint32_t p) {
    const auto& pack = packs_[p];
    for (int moves = 0; moves < kMaxMovesPerVisit; ++moves) {
      if (tokens_[p] >= c_.seq_len || pool_.empty()) return;
      PackRoom room{c_.seq_len - tokens_[p], max_images_ - images_[p],
                    pack.size() >= max_samples_ ? 0 : max_samples_ - pack.size()};
      MoveSearch search(items_, pool_, room);
      // Cheapest and most frequent first, so a move that fills the pack ends the search.
      search.TrySingle(MoveKind::kAdd1, {}, 0, 0);
      for (size_t k = 0; k < pack.size() && !search.full(); ++k) {
        const PackItem& a = items_[pack[k]];
        if (Movable(locked_, pack[k])) search.TrySingle(MoveKind::kSwap11, {k}, a.tokens, a.images);
      }
      if (!search.full()) search.TryPair(MoveKind::kAdd2, {}, 0, 0);
      for (size_t k = 0; k < pack.size() && !search.full(); ++k) {
        const PackItem& a = items_[pack[k]];
        if (Movable(locked_, pack[k])) search.TryPair(MoveKind::kSwap12, {k}, a.tokens, a.images);
      }
      const size_t pair_items = std::min(pack.size(), kMaxPairItems);
      for (size_t k1 = 0; k1 < pair_items && !search.full(); ++k1) {
        if (!Movable(locked_, pack[k1])) continue;
        const PackItem& a1 = items_[pack[k1]];
        for (size_t k2 = k1 + 1; k2 < pair_items && !search.full(); ++k2) {
          if (!Movable(locked_, pack[k2])) continue;
          const PackItem& a2 = items_[pack[k2]];
          uint32_t out_tokens = a1.tokens + a2.tokens, out_images = a1.images + a2.images;
          search.TrySingle(MoveKind::kSwap21, {k1, k2}, out_tokens, out_images);
          if (!search.full()) search.TryPair(MoveKind::kSwap22, {k1, k2}, out_tokens, out_images);
        }
      }
      if (search.best().gain == 0) return;
      Apply(p, search.best());
    }
  }

  // Spare items in, pack items out (the later position first), tallies and stats updated.
  void Apply(uint32_t p, const Move& m) {
    auto& pack = packs_[p];
    uint32_t out[2];
    for (uint32_t k = m.out_count; k-- > 0;) {
      out[k] = pack[m.out[k]];
      pack.erase(pack.begin() + static_cast<ptrdiff_t>(m.out[k]));
    }
    for (uint32_t k = 0; k < m.in_count; ++k) {
      pool_.Remove(m.in[k]);
      pack.push_back(m.in[k]);
      tokens_[p] += items_[m.in[k]].tokens;
      images_[p] += items_[m.in[k]].images;
    }
    for (uint32_t k = 0; k < m.out_count; ++k) {
      pool_.Add(out[k]);
      tokens_[p] -= items_[out[k]].tokens;
      images_[p] -= items_[out[k]].images;
    }
    switch (m.kind) {
      case MoveKind::kAdd1:
      case MoveKind::kAdd2: stats_.added += m.in_count; break;
      case MoveKind::kSwap11: ++stats_.swapped; break;
      case MoveKind::kSwap12: ++stats_.swapped_1_2; break;
      case MoveKind::kSwap21: ++stats_.swapped_2_1; break;
      case MoveKind::kSwap22: ++stats_.swapped_2_2; break;
    }
  }

  static constexpr size_t kNoItem = SIZE_MAX;

  // A shift found for pack p: its item at x_pos (kNoItem: none) for pack q's item at y_pos,
  // then a spare move on q that gains `gain` (≥ what p gains, so q's gap does not grow).
  struct Shift {
    uint32_t q = 0;
    size_t x_pos = kNoItem;
    size_t y_pos = 0;
    uint32_t gain = 0;
  };

  void AddHolder(uint32_t i, uint32_t p) {
    uint32_t v = items_[i].tokens;
    if (v == 0 || v > c_.seq_len || !Movable(locked_, i)) return;
    auto& list = holders_[v];
    if (!list.empty() && list.back() == p) return;
    list.push_back(p);
    held_[v >> 6] |= uint64_t{1} << (v & 63);
  }

  // Whether an earlier position of `list` holds an item of the same tokens and images (and
  // movability): such positions make the same moves, so only the first is tried.
  bool SeenBefore(const std::vector<uint32_t>& list, size_t k) const {
    const PackItem& a = items_[list[k]];
    for (size_t j = 0; j < k; ++j) {
      const PackItem& b = items_[list[j]];
      if (a.tokens == b.tokens && a.images == b.images &&
          Movable(locked_, list[j]) == Movable(locked_, list[k])) {
        return true;
      }
    }
    return false;
  }

  // The largest gain of one spare move (add 1 or 2, 1↔1, 1↔2) on a pack holding `list` with
  // `room`: a subset of what Improve searches, so Improve then gains at least as much.
  uint32_t SpareGain(const std::vector<uint32_t>& list, const PackRoom& room) {
    MoveSearch search(items_, pool_, room);
    search.TrySingle(MoveKind::kAdd1, {}, 0, 0);
    if (!search.full()) search.TryPair(MoveKind::kAdd2, {}, 0, 0);
    // Distinct (tokens, images) of the movable items tried so far: few in a pack of many.
    tried_.clear();
    for (size_t k = 0; k < list.size() && !search.full(); ++k) {
      if (!Movable(locked_, list[k])) continue;
      const PackItem& a = items_[list[k]];
      const std::pair<uint32_t, uint32_t> key{a.tokens, a.images};
      if (std::find(tried_.begin(), tried_.end(), key) != tried_.end()) continue;
      tried_.push_back(key);
      search.TrySingle(MoveKind::kSwap11, {k}, a.tokens, a.images);
      if (!search.full()) search.TryPair(MoveKind::kSwap12, {k}, a.tokens, a.images);
    }
    return search.best().gain;
  }

  // The shift of largest gain for short pack p: for each distinct own item x (then none),
  // values y in (x, x + gap] largest first, at most kShiftTries holders each. Ties keep the
  // first; a shift that fills both packs ends the search.
  Shift FindShift(uint32_t p) {
    const auto& pack = packs_[p];
    const uint32_t gap = c_.seq_len - tokens_[p];
    Shift best;
    for (size_t k = 0; k <= pack.size(); ++k) {
      const bool none = k == pack.size();  // tried last: P then holds one more sample
      if (none ? pack.size() >= max_samples_ : !Movable(locked_, pack[k]) || SeenBefore(pack, k)) {
        continue;
      }
      const uint32_t x_tokens = none ? 0 : items_[pack[k]].tokens;
      const uint32_t x_images = none ? 0 : items_[pack[k]].images;
      size_t tries = 0;
      for (uint32_t v = SparePool::PrevSet(held_, x_tokens, x_tokens + gap);
           v != 0 && tries < kShiftTries; v = SparePool::PrevSet(held_, x_tokens, v - 1)) {
        const uint32_t d = v - x_tokens;  // what P gains
        for (uint32_t q : holders_[v]) {
          if (tries++ >= kShiftTries) break;
          if (q == p) continue;
          const auto& other = packs_[q];
          size_t y_pos = other.size();
          for (size_t j = 0; j < other.size(); ++j) {
            if (items_[other[j]].tokens == v && Movable(locked_, other[j])) {
              y_pos = j;
              break;
            }
          }
          if (y_pos == other.size()) continue;  // stale entry
          const PackItem& y = items_[other[y_pos]];
          if (images_[p] - x_images + y.images > max_images_) continue;
          // Q after the shift: y out, x (if any) in.
          const size_t q_samples = other.size() - (none ? 1 : 0);
          const uint64_t q_images = uint64_t{images_[q]} - y.images + x_images;
          if (q_samples > max_samples_ || q_images > max_images_) continue;
          const uint32_t room = c_.seq_len - tokens_[q] + d;
          if (room <= best.gain) continue;  // cannot beat the best
          shifted_.assign(other.begin(), other.end());
          shifted_.erase(shifted_.begin() + static_cast<ptrdiff_t>(y_pos));
          if (!none) shifted_.push_back(pack[k]);
          const uint32_t gain = SpareGain(
              shifted_,
              {room, max_images_ - static_cast<uint32_t>(q_images), max_samples_ - q_samples});
          if (gain < d || gain <= best.gain) continue;
          best = {q, none ? kNoItem : k, y_pos, gain};
          if (d == gap && gain == room) return best;  // both packs full
        }
      }
    }
    return best;
  }

  // P takes Q's y and gives its x (if any); Q's spare move is left to Improve.
  void ApplyShift(uint32_t p, const Shift& s) {
    auto& pack = packs_[p];
    auto& other = packs_[s.q];
    const uint32_t y = other[s.y_pos];
    other.erase(other.begin() + static_cast<ptrdiff_t>(s.y_pos));
    pack.push_back(y);
    Account(p, y, +1);
    Account(s.q, y, -1);
    AddHolder(y, p);
    if (s.x_pos != kNoItem) {
      const uint32_t x = pack[s.x_pos];
      pack.erase(pack.begin() + static_cast<ptrdiff_t>(s.x_pos));
      other.push_back(x);
      Account(p, x, -1);
      Account(s.q, x, +1);
      AddHolder(x, s.q);
    }
    ++stats_.shifted;
  }

  // Item i's tokens and images into (+1) or out of (-1) pack p's tallies.
  void Account(uint32_t p, uint32_t i, int sign) {
    tokens_[p] = sign > 0 ? tokens_[p] + items_[i].tokens : tokens_[p] - items_[i].tokens;
    images_[p] = sign > 0 ? images_[p] + items_[i].images : images_[p] - items_[i].images;
  }

  std::span<const PackItem> items_;
  const PackConstraints& c_;
  std::span<const uint8_t> locked_;
  std::vector<std::vector<uint32_t>>& packs_;
  SparePool& pool_;
  RefillStats& stats_;
  const uint32_t max_images_;
  const uint64_t max_samples_;
  std::vector<uint32_t> tokens_, images_;  // per pack
  // ShiftGaps: per token value, packs that held a movable item of it (some stale); bit v of
  // held_ set once holders_[v] has an entry.
  std::vector<std::vector<uint32_t>> holders_;
  std::vector<uint64_t> held_;
  std::vector<uint32_t> shifted_;  // FindShift's scratch: a pack's items after a shift
  std::vector<std::pair<uint32_t, uint32_t>> tried_;  // SpareGain's scratch
};

}  // namespace

RefillStats RefillFromSpare(std::span<const PackItem> items, const PackConstraints& c,
                            std::span<const uint8_t> locked,
                            std::vector<std::vector<uint32_t>>* packs, std::vector<uint32_t>* spare,
                            RefillOptions options) {
  RefillStats stats;
  if (options.loosen) stats.loosened = Loosen(items, c, locked, packs, spare);
  std::vector<uint32_t> sizes;
  for (uint32_t i : *spare) sizes.push_back(items[i].tokens);
  std::sort(sizes.begin(), sizes.end());
  const size_t distinct =
      static_cast<size_t>(std::unique(sizes.begin(), sizes.end()) - sizes.begin());
  SparePool pool(items, c.seq_len, distinct <= kMaxPairIndexSizes);
  for (uint32_t i : *spare) pool.Add(i);
  Refiller refiller(items, c, locked, packs, &pool, &stats);
  refiller.Run();
  if (options.shift_gaps) refiller.ShiftGaps();
  *spare = pool.Items();
  return stats;
}

}  // namespace mmpt::pack
