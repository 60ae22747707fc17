#include "mmpt/balance/balancer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace mmpt::balance {
namespace {

// Costs like a mix: vision from 0 (text-only packs) to heavy; LLM around a base with an
// attention term that varies independently of vision.
std::vector<PackCost> RandomCosts(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<PackCost> costs(n);
  for (auto& c : costs) {
    c.vision = u(rng) < 0.3 ? 0.0 : 0.2 + 0.8 * u(rng);
    c.llm = 1.0 + 0.5 * u(rng) * u(rng);
  }
  return costs;
}

Assignment Identity(size_t n) {
  Assignment a(n);
  std::iota(a.begin(), a.end(), 0);
  return a;
}

void ExpectPermutation(const Assignment& a, size_t n) {
  ASSERT_EQ(a.size(), n);
  std::vector<int> seen(n, 0);
  for (uint32_t p : a) {
    ASSERT_LT(p, n);
    ++seen[p];
  }
  for (int s : seen) ASSERT_EQ(s, 1);
}

TEST(EvaluateTest, HandComputedStepTimes) {
  // dp 2, ga 2, mbs 1, one group of 2. Packs (v, l):
  std::vector<PackCost> packs = {{1, 2}, {3, 1}, {0, 4}, {2, 2}};
  Assignment a = {0, 1, 2, 3};  // rank 0: packs 0, 1; rank 1: packs 2, 3
  Grid grid{2, 2, 1, 2, 1, SyncModel::kMicrostep};
  Estimate e = Evaluate(packs, a, grid);
  // micro 0: ranks hold (1,2) and (0,4) → max v 1 + max l 4 = 5; micro 1: (3,1), (2,2) → 3 + 2.
  EXPECT_DOUBLE_EQ(e.step_seconds, 10.0);
  EXPECT_DOUBLE_EQ(e.lower_bound_seconds, 15.0 / 2);
  EXPECT_DOUBLE_EQ(e.max_vision_imbalance, 2.0);  // micro 0: max 1 / mean 0.5
  grid.sync = SyncModel::kStep;
  e = Evaluate(packs, a, grid);
  EXPECT_DOUBLE_EQ(e.step_seconds, 8.0);  // rank 1: 4 + 4
  grid = Grid{1, 4, 1, 1, 2, SyncModel::kPipeline};
  e = Evaluate(packs, a, grid);
  // Σ/pp = 7.5; edge ½ × (3/3 + 2·4/3).
  EXPECT_NEAR(e.step_seconds, 7.5 + 0.5 * (1.0 + 8.0 / 3), 1e-12);
}

TEST(BalanceTest, RejectsWrongSizes) {
  std::vector<PackCost> packs(6);
  EXPECT_FALSE(Balance(packs, Grid{2, 2, 1, 2, 1, SyncModel::kMicrostep}).ok());
  EXPECT_FALSE(Balance(packs, Grid{6, 1, 1, 4, 1, SyncModel::kMicrostep}).ok());
  EXPECT_TRUE(Balance(packs, Grid{6, 1, 1, 3, 1, SyncModel::kMicrostep}).ok());
  EXPECT_FALSE(ParseSyncModel("barrier").ok());
}

class BalancePropertyTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(BalancePropertyTest, EverySyncModelBeatsArrivalOrderAndApproachesTheBound) {
  for (SyncModel sync : {SyncModel::kStep, SyncModel::kMicrostep, SyncModel::kPipeline}) {
    for (uint32_t mbs : {1u, 2u}) {
      Grid grid{16, 32, mbs, 8, sync == SyncModel::kPipeline ? 4u : 1u, sync};
      auto packs = RandomCosts(GetParam() * 10 + mbs, grid.slots());
      auto a = Balance(packs, grid);
      ASSERT_TRUE(a.ok());
      ExpectPermutation(*a, packs.size());
      auto again = Balance(packs, grid);
      EXPECT_EQ(*a, *again);
      Estimate mine = Evaluate(packs, *a, grid);
      Estimate arrival = Evaluate(packs, Identity(packs.size()), grid);
      EXPECT_GE(mine.step_seconds, mine.lower_bound_seconds * (1 - 1e-12));
      EXPECT_LT(mine.step_seconds, arrival.step_seconds) << SyncModelName(sync);
      double limit = sync == SyncModel::kMicrostep ? 1.10 : 1.02;
      EXPECT_LT(mine.step_seconds / mine.lower_bound_seconds, limit)
          << SyncModelName(sync) << " mbs " << mbs;
    }
  }
}

TEST_P(BalancePropertyTest, PipelinePutsLightMicroStepsAtBothEnds) {
  Grid grid{4, 16, 1, 1, 4, SyncModel::kPipeline};
  auto packs = RandomCosts(GetParam(), grid.slots());
  auto a = Balance(packs, grid);
  ASSERT_TRUE(a.ok());
  for (uint32_t r = 0; r < grid.dp; ++r) {
    auto cost = [&](uint32_t m) {
      const PackCost& c = packs[(*a)[r * grid.ga + m]];
      return c.vision + c.llm;
    };
    double middle = 0;
    for (uint32_t m = 0; m < grid.ga; ++m) middle = std::max(middle, cost(m));
    EXPECT_LE(cost(0), cost(grid.ga / 2));
    EXPECT_LE(cost(grid.ga - 1), cost(grid.ga / 2));
    EXPECT_LT(cost(0), middle);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, BalancePropertyTest, ::testing::Values(1u, 2u, 3u));

}  // namespace
}  // namespace mmpt::balance
