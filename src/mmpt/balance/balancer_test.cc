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
    c.encoder[kVisionEncoder] = u(rng) < 0.3 ? 0.0 : 0.2 + 0.8 * u(rng);
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
  EXPECT_DOUBLE_EQ(e.max_encoder_imbalance[kVisionEncoder], 2.0);  // micro 0: max 1 / mean 0.5
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

TEST_P(BalancePropertyTest, MicrostepStepsNeverBeatTheBoundOfIndivisiblePacks) {
  for (uint32_t mbs : {1u, 2u}) {
    Grid grid{16, 32, mbs, 8, 1, SyncModel::kMicrostep};
    auto packs = RandomCosts(GetParam() * 10 + mbs, grid.slots());
    auto a = Balance(packs, grid);
    ASSERT_TRUE(a.ok());
    const double bound = MicrostepLowerBound(packs, grid);
    const Estimate mine = Evaluate(packs, *a, grid);
    // A valid bound: no assignment (this one, arrival order) beats it; and mine is close.
    EXPECT_GE(mine.step_seconds, bound * (1 - 1e-12));
    EXPECT_GE(Evaluate(packs, Identity(packs.size()), grid).step_seconds, bound * (1 - 1e-12));
    if (mbs == 1) {  // with several packs per rank, a rank's micro-step outweighs each pack
      EXPECT_GE(bound, mine.lower_bound_seconds * (1 - 1e-12));
      EXPECT_LT(mine.step_seconds / bound, 1.05);
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
      return c.Total();
    };
    double middle = 0;
    for (uint32_t m = 0; m < grid.ga; ++m) middle = std::max(middle, cost(m));
    EXPECT_LE(cost(0), cost(grid.ga / 2));
    EXPECT_LE(cost(grid.ga - 1), cost(grid.ga / 2));
    EXPECT_LT(cost(0), middle);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, BalancePropertyTest, ::testing::Values(1u, 2u, 3u));

TEST(EvaluateTest, EveryEncoderIsBalancedOnItsOwn) {
  // dp 2, one group, ga 1: rank 0 holds vision 2, rank 1 audio 2; LLM 1 each.
  std::vector<PackCost> packs = {PackCost({2, 0}, 1), PackCost({0, 2}, 1)};
  Grid grid{2, 1, 1, 2, 1, SyncModel::kMicrostep};
  Estimate e = Evaluate(packs, Identity(2), grid);
  // Each encoder waits for its slowest rank: 2 (vision) + 2 (audio) + 1 (LLM).
  EXPECT_DOUBLE_EQ(e.step_seconds, 5.0);
  EXPECT_DOUBLE_EQ(e.lower_bound_seconds, 3.0);
  EXPECT_DOUBLE_EQ(e.max_encoder_imbalance[kVisionEncoder], 2.0);
  EXPECT_DOUBLE_EQ(e.max_encoder_imbalance[kAudioEncoder], 2.0);
  EXPECT_DOUBLE_EQ(e.mean_encoder_imbalance[kAudioEncoder], 2.0);
  EXPECT_DOUBLE_EQ(e.max_llm_imbalance, 1.0);
  grid.sync = SyncModel::kStep;  // ranks meet only at the end: 3 s each
  EXPECT_DOUBLE_EQ(Evaluate(packs, Identity(2), grid).step_seconds, 3.0);
}

// An omni mix in arrival order: vision-heavy packs (images, video), audio-heavy packs (speech)
// and text packs, with LLM costs that vary on their own.
std::vector<PackCost> OmniCosts(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<PackCost> costs(n);
  for (size_t i = 0; i < n; ++i) {
    const double heavy = 2.0 + 2.0 * u(rng), llm = 1.0 + 0.5 * u(rng);
    switch (i % 3) {
      case 0: costs[i] = PackCost({heavy, 0.1 * u(rng)}, llm); break;
      case 1: costs[i] = PackCost({0.1 * u(rng), heavy}, llm); break;
      default: costs[i] = PackCost({0, 0}, llm); break;
    }
  }
  return costs;
}

TEST(BalanceTest, BalancingTheVectorBeatsSummingTheEncodersAndVanilla) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    for (uint32_t mbs : {1u, 2u}) {
      Grid grid{16, 24, mbs, 8, 1, SyncModel::kMicrostep};
      const std::vector<PackCost> packs = OmniCosts(seed, grid.slots());
      // The pair balancer's view: both encoders summed into one, then the LLM.
      std::vector<PackCost> summed(packs.size());
      for (size_t i = 0; i < packs.size(); ++i) {
        summed[i] = PackCost(packs[i].vision() + packs[i].audio(), packs[i].llm);
      }
      auto vector = Balance(packs, grid);
      auto pair = Balance(summed, grid);
      ASSERT_TRUE(vector.ok() && pair.ok());
      ExpectPermutation(*vector, packs.size());
      // Every plan is judged by the real vector: each encoder waits for its own slowest rank.
      const Estimate mine = Evaluate(packs, *vector, grid);
      const Estimate by_pair = Evaluate(packs, *pair, grid);
      const Estimate vanilla = Evaluate(packs, Identity(packs.size()), grid);
      EXPECT_GE(mine.step_seconds, mine.lower_bound_seconds * (1 - 1e-12));
      EXPECT_LT(mine.step_seconds, 0.9 * by_pair.step_seconds) << "seed " << seed << " mbs " << mbs;
      EXPECT_LT(mine.step_seconds, 0.9 * vanilla.step_seconds);
      EXPECT_LT(mine.step_seconds / mine.lower_bound_seconds, 1.15)
          << "seed " << seed << " mbs " << mbs << ": pair "
          << by_pair.step_seconds / mine.lower_bound_seconds << ", vanilla "
          << vanilla.step_seconds / mine.lower_bound_seconds;
      EXPECT_LT(mine.mean_encoder_imbalance[kAudioEncoder],
                by_pair.mean_encoder_imbalance[kAudioEncoder]);
    }
  }
}

TEST(BalanceTest, AnEncoderWithNoCostLeavesThePlanAsThePairBalancerMadeIt) {
  // Image-only plans do not change: packs whose audio is 0 balance as (vision, LLM) pairs did,
  // whichever encoder slot carries the cost.
  Grid grid{16, 8, 1, 8, 1, SyncModel::kMicrostep};
  auto packs = RandomCosts(7, grid.slots());
  std::vector<PackCost> audio_only(packs.size());
  for (size_t i = 0; i < packs.size(); ++i)
    audio_only[i] = PackCost({0, packs[i].vision()}, packs[i].llm);
  auto a = Balance(packs, grid), b = Balance(audio_only, grid);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(BalanceTest, MicrostepBoundSortsEachStageIntoCells) {
  // Group 2, GA 2: vision sorted 4, 1 | 1, 1 → 4 + 1; LLM likewise → 10, which the balancer
  // reaches (the heavy packs of each stage share a micro-step with a light one).
  std::vector<PackCost> packs = {{4, 1}, {1, 4}, {1, 1}, {1, 1}};
  const Grid grid{2, 2, 1, 2, 1, SyncModel::kMicrostep};
  EXPECT_DOUBLE_EQ(MicrostepLowerBound(packs, grid), 10.0);
  auto a = Balance(packs, grid);
  ASSERT_TRUE(a.ok());
  EXPECT_DOUBLE_EQ(Evaluate(packs, *a, grid).step_seconds, 10.0);
  // Two sync groups: the mean over groups.
  EXPECT_DOUBLE_EQ(MicrostepLowerBound(packs, Grid{4, 1, 1, 2, 1, SyncModel::kMicrostep}), 5.0);
  // Only micro-step sync has barriers between packs.
  EXPECT_EQ(MicrostepLowerBound(packs, Grid{2, 2, 1, 2, 1, SyncModel::kStep}), 0.0);
}

}  // namespace
}  // namespace mmpt::balance
