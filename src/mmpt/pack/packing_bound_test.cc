#include "mmpt/pack/packing_bound.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "mmpt/pack/packer.h"

namespace mmpt::pack {
namespace {

uint64_t Sum(const std::vector<uint32_t>& tokens) {
  return std::accumulate(tokens.begin(), tokens.end(), uint64_t{0});
}

// Cases whose optimum is known (sizes multiples of the grain, 4 tokens at seq_len 8192, where
// rounding loses nothing): items over half a pack each need their own; thirds fill packs three
// at a time; a large item and the small one that completes it pair up.
TEST(PackingBoundTest, KnownOptimaAreFound) {
  auto packs = [](const std::vector<uint32_t>& tokens, uint32_t seq_len) {
    auto bound = BoundPacking(tokens, seq_len);
    EXPECT_TRUE(bound.ok()) << bound.status().ToString();
    return bound.ok() ? std::ceil(bound->packs - 1e-6) : -1.0;
  };
  EXPECT_EQ(packs(std::vector<uint32_t>(10, 4100), 8192), 10);
  EXPECT_EQ(packs(std::vector<uint32_t>(30, 2728), 8192), 10);
  std::vector<uint32_t> pairs(20, 6000);
  pairs.insert(pairs.end(), 20, 2192);
  EXPECT_EQ(packs(pairs, 8192), 20);
  // 6000 + 2200 does not fit: the small items can share packs only with each other.
  std::vector<uint32_t> misfit(20, 6000);
  misfit.insert(misfit.end(), 20, 2200);
  EXPECT_EQ(packs(misfit, 8192), 20 + 7);  // 20 alone, then 3 small ones a pack: 6⅔ → 7
}

// Valid and tight on random corpora: never more packs than a real packing (best-fit
// decreasing) uses, never fewer than the tokens need; and on items a large share of a pack it
// sees the waste that counting tokens does not.
TEST(PackingBoundTest, LiesBetweenTheTokenCountAndARealPacking) {
  for (uint32_t seed = 0; seed < 12; ++seed) {
    std::mt19937 rng(seed);
    const uint32_t seq_len = 1024 + 512 * (seed % 8);
    std::vector<uint32_t> tokens(100 + 20 * seed);
    for (uint32_t& t : tokens) t = 1 + rng() % (seed % 2 ? seq_len : seq_len / 3);
    auto bound = BoundPacking(tokens, seq_len);
    ASSERT_TRUE(bound.ok()) << bound.status().ToString();
    std::vector<PackItem> items;
    for (uint32_t t : tokens) items.push_back({t, 0});
    auto packing = PackItems(items, {seq_len, 0, 0}, Algorithm::kBestFitDecreasing);
    ASSERT_TRUE(packing.ok());
    const double packs = std::ceil(bound->packs - 1e-6);
    EXPECT_LE(packs, packing->num_packs()) << "seed " << seed;
    EXPECT_GE(packs, std::ceil(static_cast<double>(Sum(tokens)) / seq_len)) << "seed " << seed;
    EXPECT_NEAR(bound->efficiency, Sum(tokens) / (packs * seq_len), 1e-12);
  }
}

TEST(PackingBoundTest, RefusesItemsOverTheSequence) {
  EXPECT_EQ(BoundPacking(std::vector<uint32_t>{10, 9000}, 8192).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BoundPacking(std::vector<uint32_t>{1}, 0).status().code(),
            StatusCode::kInvalidArgument);
  auto empty = BoundPacking(std::vector<uint32_t>{}, 8192);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->packs, 0);
}

}  // namespace
}  // namespace mmpt::pack
