#include "mmpt/cp/pack_load.h"

#include <numeric>
#include <random>

#include <gtest/gtest.h>

namespace mmpt::cp {
namespace {

ThdSplit Split(std::vector<uint32_t> lengths, uint32_t cp, std::vector<uint32_t> extra = {}) {
  auto split = SplitThd(lengths, {.cp = cp}, extra);
  EXPECT_TRUE(split.ok()) << split.status().ToString();
  return *split;
}

EncoderAssignment Assign(const ThdSplit& split, std::vector<CpImage> images, VisionPolicy policy) {
  auto assigned = AssignVision(split, images, policy);
  EXPECT_TRUE(assigned.ok()) << assigned.status().ToString();
  return *assigned;
}

TEST(PackLoadTest, LlmSplitsByTokensAndWeightedCausalPairsOfEachRanksChunks) {
  // 6 tokens padded to 8 on CP 2: chunks of 2; rank 0 holds [0, 2) and the padding [6, 8),
  // rank 1 holds [2, 6). Pairs: rank 0: 1 + 2 = 3; rank 1: 3 + 4 + 5 + 6 = 18.
  const ThdSplit split = Split({6}, 2);
  const EncoderAssignment none = Assign(split, {}, VisionPolicy::kCost);
  auto by_tokens = PackRankLoads(split, none, {}, 3.0, 0.0);
  ASSERT_EQ(by_tokens.size(), 2u);
  EXPECT_DOUBLE_EQ(by_tokens[0].llm, 1.0);
  EXPECT_DOUBLE_EQ(by_tokens[1].llm, 2.0);
  EXPECT_DOUBLE_EQ(by_tokens[0].attention_pairs, 3.0);
  EXPECT_DOUBLE_EQ(by_tokens[1].attention_pairs, 18.0);
  // Weight 1: work 2 + 3 = 5 and 4 + 18 = 22 of 27.
  auto weighted = PackRankLoads(split, none, {}, 27.0, 1.0);
  EXPECT_DOUBLE_EQ(weighted[0].llm, 5.0);
  EXPECT_DOUBLE_EQ(weighted[1].llm, 22.0);
  EXPECT_DOUBLE_EQ(MostLoaded(weighted).llm, 22.0);
}

TEST(PackLoadTest, APacksCpCostIsItsMostLoadedRankNeverItsTotalOverCp) {
  // 8 tokens on CP 2 (chunks of 2): an image on [1, 4) (cost 5) touches chunk 0 (rank 0) and
  // chunk 1 (rank 1); one on [6, 8) (cost 1) sits in chunk 3 (rank 0).
  const ThdSplit split = Split({8}, 2);
  const std::vector<CpImage> images = {{1, 3, 5.0}, {6, 2, 1.0}};
  const EncoderAssignment naive = Assign(split, images, VisionPolicy::kNaive);
  auto loads = PackRankLoads(split, naive, {}, 0.0, 0.0);
  // Naive: both ranks encode the straddling image.
  EXPECT_DOUBLE_EQ(loads[0].vision, 6.0);
  EXPECT_DOUBLE_EQ(loads[1].vision, 5.0);
  EXPECT_DOUBLE_EQ(MostLoaded(loads).vision, 6.0);  // not (5 + 1) / 2
  EXPECT_DOUBLE_EQ(AtomicVisionFloor(loads, naive), 5.5);
  // Cost: the large image alone on one rank; no assignment beats it (it is indivisible).
  const EncoderAssignment cost = Assign(split, images, VisionPolicy::kCost);
  loads = PackRankLoads(split, cost, {}, 0.0, 0.0);
  EXPECT_DOUBLE_EQ(MostLoaded(loads).vision, 5.0);
  EXPECT_DOUBLE_EQ(AtomicVisionFloor(loads, cost), 5.0);
  // Audio: the clips' assignment, the same way; none (no ranks) loads nothing.
  const EncoderAssignment audio = Assign(split, {{0, 2, 4.0}}, VisionPolicy::kCost);
  loads = PackRankLoads(split, cost, audio, 0.0, 0.0);
  EXPECT_DOUBLE_EQ(MostLoaded(loads).audio, 4.0);
}

TEST(PackLoadTest, NaiveSequenceCostIsAssignVisionsNaiveRuleForOneSequence) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t cp = 2 + rng() % 3;
    const uint32_t length = 20 + rng() % 400;
    // Images one after another with text between.
    std::vector<CpImage> images;
    uint32_t at = rng() % 10;
    while (true) {
      const uint32_t tokens = 1 + rng() % 60;
      if (at + tokens > length) break;
      images.push_back({at, tokens, 1.0 + rng() % 9});
      at += tokens + rng() % 20;
    }
    const uint32_t extra = 2 * cp * (rng() % 40);
    const ThdSplit split = Split({length}, cp, {extra});
    const EncoderAssignment naive = Assign(split, images, VisionPolicy::kNaive);
    const double want = std::accumulate(naive.rank_cost.begin(), naive.rank_cost.end(), 0.0);
    EXPECT_DOUBLE_EQ(NaiveSequenceCost(split.padded_tokens(), cp, images), want)
        << "trial " << trial << " cp " << cp << " length " << length << " extra " << extra;
  }
  EXPECT_DOUBLE_EQ(NaiveSequenceCost(0, 2, std::vector<CpImage>{{0, 1, 1.0}}), 0.0);
}

}  // namespace
}  // namespace mmpt::cp
