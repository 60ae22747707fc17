// SparePool lookups against brute force, and RefillFromSpare's exchange moves: each kind on a
// hand-made pack, then invariants on random instances (constraints hold, every item once, no
// pack's gap grows without loosening, locked items stay, deterministic), loosening, and gap
// shifts between kept packs.
#include "mmpt/pack/refill.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "mmpt/pack/spare_pool.h"

namespace mmpt::pack {
namespace {

std::vector<PackItem> Items(std::initializer_list<uint32_t> tokens) {
  std::vector<PackItem> items;
  for (uint32_t t : tokens) items.push_back({t, 0});
  return items;
}

// The largest item (lowest index among equals) with lo < tokens ≤ hi, images ≤ room; by scan.
std::optional<uint32_t> BruteLargest(std::span<const PackItem> items,
                                     const std::vector<uint8_t>& in, uint32_t lo, uint32_t hi,
                                     uint32_t room) {
  std::optional<uint32_t> best;
  for (uint32_t i = 0; i < items.size(); ++i) {
    if (!in[i] || items[i].tokens <= lo || items[i].tokens > hi || items[i].images > room) continue;
    if (!best || items[i].tokens > items[*best].tokens) best = i;
  }
  return best;
}

// The largest pair sum in (lo, hi] (images ignored), or 0; by scan.
uint32_t BrutePairSum(std::span<const PackItem> items, const std::vector<uint8_t>& in, uint32_t lo,
                      uint32_t hi) {
  uint32_t best = 0;
  for (uint32_t i = 0; i < items.size(); ++i) {
    for (uint32_t j = i + 1; j < items.size(); ++j) {
      uint32_t s = items[i].tokens + items[j].tokens;
      if (in[i] && in[j] && s > lo && s <= hi) best = std::max(best, s);
    }
  }
  return best;
}

TEST(SparePoolTest, LookupsMatchBruteForceThroughAddsAndRemoves) {
  std::mt19937 rng(7);
  std::vector<PackItem> items(300);
  for (auto& item : items) item = {1 + static_cast<uint32_t>(rng() % 700), 0};
  items[5].tokens = 900;  // above max_tokens: kept, never looked up
  SparePool pool(items, 800);
  std::vector<uint8_t> in(items.size(), 0);
  for (int op = 0; op < 3000; ++op) {
    uint32_t i = rng() % items.size();
    if (in[i]) {
      pool.Remove(i);
    } else {
      pool.Add(i);
    }
    in[i] ^= 1;
    if (op % 10 != 0) continue;
    uint32_t lo = rng() % 800, hi = lo + rng() % 200;
    std::vector<uint8_t> lookable = in;
    lookable[5] = 0;
    auto got = pool.Largest(lo, hi, UINT32_MAX);
    auto want = BruteLargest(items, lookable, lo, std::min(hi, 800u), UINT32_MAX);
    ASSERT_EQ(got.has_value(), want.has_value()) << "op " << op;
    if (got) {
      EXPECT_EQ(*got, *want) << "op " << op;  // lowest index among the largest
    }
    auto pair = pool.LargestPair(lo, hi, UINT32_MAX);
    uint32_t sum = BrutePairSum(items, lookable, lo, std::min(hi, 800u));
    ASSERT_EQ(pair.has_value(), sum != 0) << "op " << op;
    if (pair) {
      EXPECT_NE(pair->first, pair->second);
      EXPECT_TRUE(in[pair->first] && in[pair->second]);
      EXPECT_EQ(items[pair->first].tokens + items[pair->second].tokens, sum) << "op " << op;
    }
  }
  std::vector<uint32_t> want;
  for (uint32_t i = 0; i < items.size(); ++i) {
    if (in[i]) want.push_back(i);
  }
  EXPECT_EQ(pool.Items(), want);
  EXPECT_EQ(pool.size(), want.size());
}

TEST(SparePoolTest, ImageRoomIsRespected) {
  std::vector<PackItem> items = {{50, 3}, {50, 1}, {40, 0}, {10, 2}};
  SparePool pool(items, 100);
  for (uint32_t i = 0; i < items.size(); ++i) pool.Add(i);
  EXPECT_EQ(pool.Largest(0, 100, 3), 0u);  // lowest index of the largest
  EXPECT_EQ(pool.Largest(0, 100, 2), 1u);
  EXPECT_EQ(pool.Largest(0, 100, 0), 2u);
  auto pair = pool.LargestPair(0, 100, 4);  // 50 + 50 needs 4 images
  ASSERT_TRUE(pair.has_value());
  EXPECT_EQ(*pair, std::pair(0u, 1u));
  pair = pool.LargestPair(0, 100, 1);  // 50 (1 image) + 40 (none)
  ASSERT_TRUE(pair.has_value());
  EXPECT_EQ(*pair, std::pair(1u, 2u));
}

// Refill one pack of `pack` items against `spare` items (indices after the pack's).
struct OnePack {
  std::vector<PackItem> items;
  std::vector<std::vector<uint32_t>> packs;
  std::vector<uint32_t> spare;
  RefillStats stats;
  uint32_t tokens() const {
    uint32_t t = 0;
    for (uint32_t i : packs[0]) t += items[i].tokens;
    return t;
  }
};
OnePack RefillOne(std::initializer_list<uint32_t> pack, std::initializer_list<uint32_t> spare,
                  PackConstraints c = {100, 0, 0}) {
  OnePack r;
  r.items = Items(pack);
  r.packs.emplace_back();
  for (uint32_t i = 0; i < pack.size(); ++i) r.packs[0].push_back(i);
  for (uint32_t t : spare) {
    r.spare.push_back(static_cast<uint32_t>(r.items.size()));
    r.items.push_back({t, 0});
  }
  r.stats =
      RefillFromSpare(r.items, c, {}, &r.packs, &r.spare, {.loosen = false, .shift_gaps = false});
  return r;
}

// A random instance as the planner makes one: the first `packed` items packed with best-fit
// decreasing (all those packs kept), the rest spare, every `lock_every`-th item locked.
struct Instance {
  std::vector<PackItem> items;
  std::vector<std::vector<uint32_t>> packs;
  std::vector<uint32_t> spare;
  std::vector<uint8_t> locked;
  uint64_t Tokens(const std::vector<uint32_t>& pack) const {
    uint64_t t = 0;
    for (uint32_t i : pack) t += items[i].tokens;
    return t;
  }
};
Instance PackedInstance(std::vector<PackItem> items, size_t packed, const PackConstraints& c,
                        size_t lock_every) {
  Instance in;
  in.items = std::move(items);
  auto packing = PackItems(std::span(in.items).first(packed), c, Algorithm::kBestFitDecreasing);
  EXPECT_TRUE(packing.ok());
  if (!packing.ok()) return in;
  in.packs.resize(packing->num_packs());
  for (size_t p = 0; p < in.packs.size(); ++p) {
    auto pack = packing->Pack(p);
    in.packs[p].assign(pack.begin(), pack.end());
  }
  for (size_t i = packed; i < in.items.size(); ++i) in.spare.push_back(static_cast<uint32_t>(i));
  in.locked.assign(in.items.size(), 0);
  for (size_t i = 0; i < in.items.size(); i += lock_every) in.locked[i] = 1;
  return in;
}

// What a refill without loosening must keep: constraints hold, every item is in exactly one
// pack or the spare (sorted), locked items stay in their pack, no pack loses tokens. Returns
// the tokens gained over `in`'s packs.
uint64_t ExpectRefillInvariants(const Instance& in, const PackConstraints& c,
                                const std::vector<std::vector<uint32_t>>& packs,
                                const std::vector<uint32_t>& spare) {
  std::vector<int> seen(in.items.size(), 0);
  uint64_t gain = 0;
  for (size_t p = 0; p < packs.size(); ++p) {
    uint32_t images = 0;
    for (uint32_t i : packs[p]) {
      ++seen[i];
      images += in.items[i].images;
    }
    for (uint32_t i : in.packs[p]) {
      if (in.locked[i]) {
        EXPECT_NE(std::find(packs[p].begin(), packs[p].end(), i), packs[p].end());
      }
    }
    const uint64_t tokens = in.Tokens(packs[p]), tokens_before = in.Tokens(in.packs[p]);
    EXPECT_LE(tokens, c.seq_len);
    EXPECT_LE(images, c.max_images);
    EXPECT_LE(packs[p].size(), c.max_samples);
    EXPECT_GE(tokens, tokens_before) << "pack " << p << " lost tokens";
    if (tokens > tokens_before) gain += tokens - tokens_before;
  }
  for (uint32_t i : spare) ++seen[i];
  for (int n : seen) EXPECT_EQ(n, 1);
  EXPECT_TRUE(std::is_sorted(spare.begin(), spare.end()));
  return gain;
}

TEST(RefillTest, OneItemOutTwoIn) {
  // Gap 10: nothing fits alone, 30 → 20 + 19 gains 9.
  OnePack r = RefillOne({60, 30}, {20, 19});
  EXPECT_EQ(r.tokens(), 99u);
  EXPECT_EQ(r.stats.swapped_1_2, 1u);
  EXPECT_EQ(r.spare, std::vector<uint32_t>{1});  // the 30 is spare now
  // With at most two samples per pack the move is not allowed.
  OnePack capped = RefillOne({60, 30}, {20, 19}, {100, 2, 0});
  EXPECT_EQ(capped.tokens(), 90u);
  EXPECT_EQ(capped.stats.moves(), 0u);
}

TEST(RefillTest, TwoItemsOutOneIn) {
  OnePack r = RefillOne({40, 45}, {95});
  EXPECT_EQ(r.tokens(), 95u);
  EXPECT_EQ(r.stats.swapped_2_1, 1u);
  EXPECT_EQ(r.spare, (std::vector<uint32_t>{0, 1}));
}

TEST(RefillTest, TwoItemsOutTwoIn) {
  // No single item or pair fits any gap alone; 50 + 40 → 70 + 27 gains 7.
  OnePack r = RefillOne({50, 40}, {70, 27});
  EXPECT_EQ(r.tokens(), 97u);
  EXPECT_EQ(r.stats.swapped_2_2, 1u);
  EXPECT_EQ(r.spare, (std::vector<uint32_t>{0, 1}));
}

TEST(RefillTest, TheLargestGainWinsAndFillsExactly) {
  // 1↔1 (30 → 38) gains 8, add-two (4 + 6) fills the gap of 10 exactly.
  OnePack r = RefillOne({60, 30}, {38, 4, 6});
  EXPECT_EQ(r.tokens(), 100u);
  EXPECT_EQ(r.stats.added, 2u);
  EXPECT_EQ(r.stats.swapped, 0u);
}

TEST(RefillTest, ExchangesKeepConstraintsNeverGrowAGapAndAreDeterministic) {
  for (uint32_t seed : {11u, 12u, 13u, 14u}) {
    std::mt19937 rng(seed);
    // Large items (2-4 per pack) from few distinct sizes: the regime the exchanges are for.
    std::vector<PackItem> items(3000);
    for (auto& item : items) {
      item = {700 + 90 * static_cast<uint32_t>(rng() % 60), static_cast<uint32_t>(rng() % 4)};
    }
    PackConstraints c{8192, 4, 8};
    const Instance in = PackedInstance(std::move(items), 2500, c, 11);
    auto packs = in.packs;
    auto spare = in.spare;
    RefillStats stats = RefillFromSpare(in.items, c, in.locked, &packs, &spare,
                                        {.loosen = false, .shift_gaps = false});
    EXPECT_EQ(stats.loosened, 0u);
    EXPECT_GT(stats.swapped_1_2 + stats.swapped_2_1 + stats.swapped_2_2, 0u) << "seed " << seed;
    EXPECT_GT(ExpectRefillInvariants(in, c, packs, spare), 0u);

    // The same input gives the same packs and spare.
    auto again = in.packs;
    auto again_spare = in.spare;
    RefillFromSpare(in.items, c, in.locked, &again, &again_spare,
                    {.loosen = false, .shift_gaps = false});
    EXPECT_EQ(again, packs);
    EXPECT_EQ(again_spare, spare);
  }
}

// Caption-like items (~20 a pack, few distinct sizes): best-fit decreasing leaves gaps below the
// common sizes and a spare of the smallest items. Loosening gives the spare every size, and the
// packs end fuller than with exchanges alone; constraints, locks, every item once and
// determinism still hold.
TEST(RefillTest, LooseningFillsPacksOfManySmallItems) {
  for (uint32_t seed : {21u, 22u, 23u}) {
    std::mt19937 rng(seed);
    std::vector<PackItem> items(12000);
    for (auto& item : items) {
      uint32_t kind = rng() % 10;
      item = {kind == 0 ? 60 + static_cast<uint32_t>(rng() % 140)
                        : 300 + 4 * static_cast<uint32_t>(rng() % 60),
              1};
    }
    PackConstraints c{8192, 0, 24};
    auto packing = PackItems(items, c, Algorithm::kBestFitDecreasing);
    ASSERT_TRUE(packing.ok());
    // The fullest packs are kept, the rest is spare, as the planner does.
    std::vector<uint32_t> ranked(packing->num_packs());
    std::iota(ranked.begin(), ranked.end(), 0);
    std::stable_sort(ranked.begin(), ranked.end(), [&](uint32_t a, uint32_t b) {
      return packing->pack_tokens[a] > packing->pack_tokens[b];
    });
    const size_t kept = ranked.size() - 8;
    std::vector<std::vector<uint32_t>> packs(kept);
    std::vector<uint32_t> spare;
    for (size_t k = 0; k < ranked.size(); ++k) {
      auto pack = packing->Pack(ranked[k]);
      if (k < kept) {
        packs[k].assign(pack.begin(), pack.end());
      } else {
        spare.insert(spare.end(), pack.begin(), pack.end());
      }
    }
    std::vector<uint8_t> locked(items.size(), 0);
    for (size_t i = 0; i < items.size(); i += 13) locked[i] = 1;
    auto total = [&](const std::vector<std::vector<uint32_t>>& ps) {
      uint64_t t = 0;
      for (const auto& p : ps) {
        for (uint32_t i : p) t += items[i].tokens;
      }
      return t;
    };
    auto plain = packs, loose = packs;
    auto plain_spare = spare, loose_spare = spare;
    RefillFromSpare(items, c, locked, &plain, &plain_spare, {.loosen = false, .shift_gaps = false});
    RefillStats stats =
        RefillFromSpare(items, c, locked, &loose, &loose_spare, {.shift_gaps = false});
    EXPECT_GT(stats.loosened, 0u);
    EXPECT_GT(total(loose), total(plain)) << "seed " << seed;
    EXPECT_GE(total(plain), total(packs));

    std::vector<int> seen(items.size(), 0);
    for (size_t p = 0; p < loose.size(); ++p) {
      uint32_t tokens = 0, images = 0;
      for (uint32_t i : loose[p]) {
        ++seen[i];
        tokens += items[i].tokens;
        images += items[i].images;
      }
      EXPECT_LE(tokens, c.seq_len);
      EXPECT_LE(images, c.max_images);
      for (uint32_t i : packs[p]) {
        if (locked[i]) {
          EXPECT_NE(std::find(loose[p].begin(), loose[p].end(), i), loose[p].end());
        }
      }
    }
    for (uint32_t i : loose_spare) ++seen[i];
    for (int s : seen) ASSERT_EQ(s, 1);
    auto again = packs;
    auto again_spare = spare;
    RefillFromSpare(items, c, locked, &again, &again_spare, {.shift_gaps = false});
    EXPECT_EQ(again, loose);
    EXPECT_EQ(again_spare, loose_spare);
  }
}

// P = 500 + 490 (gap 10) and Q = 500 + 475 (gap 25) against a spare of one 35: no spare move
// fits either pack. Q, the emptier, is visited first: its 475 for P's 500 fills Q and leaves P a
// gap of 35, which the spare item fills.
TEST(RefillTest, ShiftingAGapBetweenPacksFillsBoth) {
  std::vector<PackItem> items = Items({500, 490, 500, 475, 35});
  PackConstraints c{1000, 0, 0};
  auto run = [&](RefillOptions options, std::vector<std::vector<uint32_t>>* packs,
                 std::vector<uint32_t>* spare) {
    *packs = {{0, 1}, {2, 3}};
    *spare = {4};
    return RefillFromSpare(items, c, {}, packs, spare, options);
  };
  std::vector<std::vector<uint32_t>> packs;
  std::vector<uint32_t> spare;
  RefillStats off = run({.loosen = false, .shift_gaps = false}, &packs, &spare);
  EXPECT_EQ(off.moves(), 0u);
  EXPECT_EQ(spare, std::vector<uint32_t>{4});
  RefillStats on = run({.loosen = false}, &packs, &spare);
  EXPECT_EQ(on.shifted, 1u);
  EXPECT_TRUE(spare.empty());
  EXPECT_EQ(packs, (std::vector<std::vector<uint32_t>>{{1, 3, 4}, {2, 0}}));
  // With the 490 and the 475 locked no item of one pack is 10 or 25 above one of the other's.
  std::vector<uint8_t> locked = {0, 1, 0, 1, 0};
  packs = {{0, 1}, {2, 3}};
  spare = {4};
  EXPECT_EQ(RefillFromSpare(items, c, locked, &packs, &spare, {.loosen = false}).shifted, 0u);
  // The pack taking the spare item would hold three samples: not with at most two.
  packs = {{0, 1}, {2, 3}};
  spare = {4};
  EXPECT_EQ(RefillFromSpare(items, {1000, 2, 0}, {}, &packs, &spare, {.loosen = false}).shifted,
            0u);
}

// Caption-like random instances (a few common sizes, as in COCO): shifting gaps raises the
// tokens in packs over the spare moves alone, never lowers a pack's tokens (without loosening),
// keeps constraints and locks, every item once, and is deterministic.
TEST(RefillTest, ShiftingGapsKeepsInvariantsAndRaisesTheTotal) {
  uint64_t shifted = 0;
  for (uint32_t seed : {31u, 32u, 33u, 34u}) {
    std::mt19937 rng(seed);
    std::vector<PackItem> items(9000);
    for (auto& item : items) {
      uint32_t kind = rng() % 4;
      item = {kind == 0 ? 377 + static_cast<uint32_t>(rng() % 4)
                        : 400 + 3 * static_cast<uint32_t>(rng() % 40),
              static_cast<uint32_t>(rng() % 3)};
    }
    PackConstraints c{8192, 24, 40};
    const Instance in = PackedInstance(std::move(items), 7600, c, 17);
    auto plain = in.packs, shift = in.packs;
    auto plain_spare = in.spare, shift_spare = in.spare;
    RefillFromSpare(in.items, c, in.locked, &plain, &plain_spare,
                    {.loosen = false, .shift_gaps = false});
    RefillStats stats =
        RefillFromSpare(in.items, c, in.locked, &shift, &shift_spare, {.loosen = false});
    shifted += stats.shifted;
    ExpectRefillInvariants(in, c, shift, shift_spare);
    uint64_t total_plain = 0, total_shift = 0;
    for (size_t p = 0; p < in.packs.size(); ++p) {
      total_plain += in.Tokens(plain[p]);
      total_shift += in.Tokens(shift[p]);
    }
    // Shifts run after the spare moves, and each raises the total.
    EXPECT_GE(total_shift, total_plain) << "seed " << seed;
    if (stats.shifted > 0) {
      EXPECT_GT(total_shift, total_plain) << "seed " << seed;
    }
    auto again = in.packs;
    auto again_spare = in.spare;
    RefillFromSpare(in.items, c, in.locked, &again, &again_spare, {.loosen = false});
    EXPECT_EQ(again, shift);
    EXPECT_EQ(again_spare, shift_spare);
  }
  EXPECT_GT(shifted, 0u);
}

}  // namespace
}  // namespace mmpt::pack
