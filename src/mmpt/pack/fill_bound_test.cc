#include "mmpt/pack/fill_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "mmpt/pack/refill.h"

namespace mmpt::pack {
namespace {

// Photo posts: 2 to 6 photos of 777 to 1073 tokens each, plus a caption of 40 to 80 tokens.
std::vector<PackItem> PhotoItems(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  constexpr uint32_t kPhoto[] = {999, 888, 1073, 777};
  std::vector<PackItem> items(n);
  for (PackItem& item : items) {
    item.images = 2 + rng() % 5;
    item.tokens = 40 + rng() % 41;
    for (uint32_t j = 0; j < item.images; ++j) item.tokens += kPhoto[rng() % 4];
  }
  return items;
}

std::vector<PackItem> RandomItems(uint32_t seed, size_t n, uint32_t seq_len) {
  std::mt19937 rng(seed);
  std::vector<PackItem> items(n);
  for (PackItem& item : items) item.tokens = 1 + rng() % (rng() % 3 == 0 ? seq_len : seq_len / 4);
  return items;
}

// The bound is valid: on random pools, the planner's way (best-fit decreasing, the fullest
// `keep` packs, refilled from the rest) never places more tokens than it.
TEST(FillBoundTest, NoPackingOfThePoolBeatsTheBound) {
  for (uint32_t seed = 0; seed < 40; ++seed) {
    const uint32_t seq_len = 512 + seed * 197;
    std::vector<PackItem> items =
        seed % 2 ? PhotoItems(seed, 300) : RandomItems(seed, 300, seq_len);
    for (PackItem& item : items) item.tokens = std::min(item.tokens, seq_len);
    const PackConstraints c{seq_len, 0, 0};
    auto packing = PackItems(items, c);
    ASSERT_TRUE(packing.ok());
    std::vector<uint32_t> ranked(packing->num_packs());
    for (uint32_t p = 0; p < ranked.size(); ++p) ranked[p] = p;
    std::stable_sort(ranked.begin(), ranked.end(), [&](uint32_t a, uint32_t b) {
      return packing->pack_tokens[a] > packing->pack_tokens[b];
    });
    const size_t keep = std::max<size_t>(1, packing->num_packs() * (seed % 4 + 1) / 5);
    std::vector<std::vector<uint32_t>> packs;
    std::vector<uint32_t> spare;
    for (size_t k = 0; k < ranked.size(); ++k) {
      auto pack = packing->Pack(ranked[k]);
      if (k < keep) {
        packs.emplace_back(pack.begin(), pack.end());
      } else {
        spare.insert(spare.end(), pack.begin(), pack.end());
      }
    }
    RefillFromSpare(items, c, {}, &packs, &spare);
    uint64_t placed = 0, best_pack = 0;
    for (const auto& pack : packs) {
      uint64_t tokens = 0;
      for (uint32_t i : pack) tokens += items[i].tokens;
      placed += tokens;
      best_pack = std::max(best_pack, tokens);
    }
    const FillBound bound = BoundFill(items, seq_len, keep);
    EXPECT_GE(bound.tokens, placed) << "seed " << seed;
    EXPECT_GE(bound.best_pack_tokens, best_pack) << "seed " << seed;
    EXPECT_LE(bound.best_pack_tokens, seq_len);
    EXPECT_LE(bound.efficiency, 1.0);
    EXPECT_GE(bound.seconds, 0.0);
  }
}

// The bound is exact on small cases: the best subset sum, and Σ tokens when that binds.
TEST(FillBoundTest, BestSubsetSumAndTotalBind) {
  const PackItem items[] = {{5000, 0}, {3000, 0}, {3000, 0}, {2500, 0}};
  FillBound b = BoundFill(items, 8192, 1);
  EXPECT_EQ(b.best_pack_tokens, 8000u);  // 5000 + 3000
  EXPECT_EQ(b.tokens, 8000u);
  b = BoundFill(items, 8192, 2);
  EXPECT_EQ(b.tokens, 13500u);  // every item's tokens
  const PackItem twins[] = {{3000, 0}, {3000, 0}, {3000, 0}};
  EXPECT_EQ(BoundFill(twins, 8192, 1).best_pack_tokens, 6000u);
  EXPECT_NEAR(BoundFill(twins, 8192, 1).efficiency, 6000.0 / 8192, 1e-12);
  const PackItem odd[] = {{63, 0}, {64, 0}, {65, 0}};  // shifts across 64-bit words
  EXPECT_EQ(BoundFill(odd, 200, 1).best_pack_tokens, 192u);
  EXPECT_EQ(BoundFill(odd, 128, 1).best_pack_tokens, 128u);
}

TEST(FillBoundTest, LargeItemsByTheMedian) {
  std::vector<uint32_t> photos;
  for (const PackItem& item : PhotoItems(1, 1000)) photos.push_back(item.tokens);
  EXPECT_TRUE(LargeItems(photos, 8192));
  EXPECT_FALSE(LargeItems(photos, 65536));
  const uint32_t captions[] = {400, 450, 500, 8000};
  EXPECT_FALSE(LargeItems(captions, 8192));
  EXPECT_FALSE(LargeItems({}, 8192));
}

}  // namespace
}  // namespace mmpt::pack
