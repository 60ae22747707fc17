#include "mmpt/sim/step_model.h"

#include <gtest/gtest.h>

#include "mmpt/sim/test_plans_test_util.h"

namespace mmpt::sim {
namespace {

using testing_plans::MakePlan;
using testing_plans::PackSpec;

TEST(StepModelTest, StepSyncWaitsOnlyAtTheEnd) {
  // dp 2, ga 2, no CP. Rank 0: (1 + 2) + (1 + 2); rank 1: (3 + 1) + (0 + 1) → step = 6.
  plan::Layout layout{.dp = 2, .ga = 2, .seq_len = 1024, .sync = plan::SyncModel::kStep};
  auto plan = MakePlan(layout, {PackSpec{{100}, {{50}}, 1, 2}, PackSpec{{100}, {{50}}, 1, 2},
                                PackSpec{{100}, {{50}}, 3, 1}, PackSpec{{100}, {}, 0, 1}});
  auto sim = SimulateStep(plan, {});
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  EXPECT_DOUBLE_EQ(sim->step_seconds, 6.0);
  EXPECT_DOUBLE_EQ(sim->lower_bound_seconds, 11.0 / 2);
  EXPECT_EQ(sim->tokens, 400u);
  EXPECT_DOUBLE_EQ(sim->at(1, 0, 0).vision_seconds, 3.0);
  EXPECT_DOUBLE_EQ(sim->at(1, 0, 0).attention_pairs, 100.0 * 101 / 2);  // one 100-token sample
}

TEST(StepModelTest, MicrostepSyncTakesMaxVisionPlusMaxLlm) {
  // Same packs, ep 2: micro-step 0: max V 3 + max L 2; micro-step 1: max V 1 + max L 2 → 8.
  plan::Layout layout{
      .dp = 2, .ep = 2, .ga = 2, .seq_len = 1024, .sync = plan::SyncModel::kMicrostep};
  auto plan = MakePlan(layout, {PackSpec{{100}, {{50}}, 1, 2}, PackSpec{{100}, {{50}}, 1, 2},
                                PackSpec{{100}, {{50}}, 3, 1}, PackSpec{{100}, {}, 0, 1}});
  SimParams params;
  params.microstep_overhead_seconds = 0.5;
  params.grad_allreduce_seconds = 1.0;
  auto sim = SimulateStep(plan, params);
  ASSERT_TRUE(sim.ok());
  EXPECT_DOUBLE_EQ(sim->step_seconds, 8.0 + 2 * 0.5 + 1.0);
  // ep 1 makes every rank its own group: back to the per-rank sum.
  plan.layout.ep = 1;
  sim = SimulateStep(plan, params);
  ASSERT_TRUE(sim.ok());
  EXPECT_DOUBLE_EQ(sim->step_seconds, 6.0 + 2.0);
}

// Measured times compose as modelled ones do: SimulateStep's step is SyncedSeconds of its own
// rank times plus the overheads, under every sync model.
TEST(StepModelTest, SyncedSecondsIsTheStepOfGivenRankTimes) {
  plan::Layout layout{
      .dp = 2, .ep = 2, .ga = 2, .seq_len = 1024, .sync = plan::SyncModel::kMicrostep};
  auto plan = MakePlan(layout, {PackSpec{{100}, {{50}}, 1, 2}, PackSpec{{100}, {{50}}, 1, 2},
                                PackSpec{{100}, {{50}}, 3, 1}, PackSpec{{100}, {}, 0, 1}});
  SimParams params;
  params.grad_allreduce_seconds = 1.0;
  for (plan::SyncModel sync : {plan::SyncModel::kStep, plan::SyncModel::kMicrostep}) {
    plan.layout.sync = sync;
    auto sim = SimulateStep(plan, params);
    ASSERT_TRUE(sim.ok());
    auto synced = SyncedSeconds(plan.layout, sim->ranks);
    ASSERT_TRUE(synced.ok());
    EXPECT_DOUBLE_EQ(*synced + 1.0, sim->step_seconds);
  }
  // Rank 1's micro-step 1 twice as slow in its LLM: under micro-step sync the step grows by
  // what it adds over rank 0's (2 → 4: +2).
  auto sim = SimulateStep(plan, {});
  ASSERT_TRUE(sim.ok());
  std::vector<RankTime> measured = sim->ranks;
  measured[3].llm_seconds = 4;
  EXPECT_DOUBLE_EQ(*SyncedSeconds(plan.layout, measured), sim->step_seconds + 2);
  measured.pop_back();
  EXPECT_EQ(SyncedSeconds(plan.layout, measured).status().code(), StatusCode::kInvalidArgument);
}

TEST(StepModelTest, AudioEncoderTimeCountsAndWaitsOnItsOwnSlowestRank) {
  // The packs above, with 2 s of audio encoding on rank 1's first pack (as an omni plan's
  // pack.audio_seconds says, and its cp stage assigns to the pack's one CP rank). Step sync:
  // rank 1 is now 4 + 2 + 1 = 7, rank 0 still 6.
  plan::Layout layout{.dp = 2, .ga = 2, .seq_len = 1024, .sync = plan::SyncModel::kStep};
  auto plan = MakePlan(layout, {PackSpec{{100}, {{50}}, 1, 2}, PackSpec{{100}, {{50}}, 1, 2},
                                PackSpec{{100}, {{50}}, 3, 1}, PackSpec{{100}, {}, 0, 1}});
  plan.packs[plan.PackIndex(1, 0, 0)].audio_seconds = 2.0;
  plan.cp[plan.PackIndex(1, 0, 0)].audio.rank_cost = {2.0};
  auto sim = SimulateStep(plan, {});
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  EXPECT_DOUBLE_EQ(sim->step_seconds, 7.0);
  EXPECT_DOUBLE_EQ(sim->audio_gpu_seconds, 2.0);
  EXPECT_DOUBLE_EQ(sim->lower_bound_seconds, 13.0 / 2);
  EXPECT_DOUBLE_EQ(sim->at(1, 0, 0).audio_seconds, 2.0);
  EXPECT_DOUBLE_EQ(sim->at(0, 0, 0).audio_seconds, 0.0);
  // Micro-step sync (ep 2): each encoder waits for its own slowest rank, then the LLM:
  // micro-step 0: max V 3 + max A 2 + max L 2; micro-step 1: 1 + 0 + 2 → 10.
  plan.layout.ep = 2;
  plan.layout.sync = plan::SyncModel::kMicrostep;
  sim = SimulateStep(plan, {});
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  EXPECT_DOUBLE_EQ(sim->step_seconds, 10.0);
}

TEST(StepModelTest, NativeEncoderFactorDividesVision) {
  plan::Layout layout{.dp = 1, .ga = 1, .seq_len = 1024, .sync = plan::SyncModel::kStep};
  auto plan = MakePlan(layout, {PackSpec{{100}, {{50}}, 4, 2}});
  SimParams params;
  params.vision_speed_factor = 2.0;
  auto sim = SimulateStep(plan, params);
  ASSERT_TRUE(sim.ok());
  EXPECT_DOUBLE_EQ(sim->step_seconds, 2.0 + 2.0);
}

TEST(StepModelTest, CpPoliciesSplitVisionDifferently) {
  // One pack of 4096 tokens on CP 2: one large image (flops 8) near the start, four small
  // (flops 1 each) after it; 12 s of vision in all. Count cuts the 5 images, in token order,
  // into runs of 3 and 2.
  plan::Layout layout{.dp = 1, .cp = 2, .ga = 1, .seq_len = 4096, .sync = plan::SyncModel::kStep};
  PackSpec pack{{4096}, {{1200, 8}, {100, 1}, {100, 1}, {100, 1}, {100, 1}}, 12, 4};
  SimParams params;
  double max_vision[3];
  for (auto policy :
       {cp::VisionPolicy::kNaive, cp::VisionPolicy::kCount, cp::VisionPolicy::kCost}) {
    auto plan = MakePlan(layout, {pack}, policy);
    auto sim = SimulateStep(plan, params);
    ASSERT_TRUE(sim.ok()) << sim.status().ToString();
    const double v0 = sim->at(0, 0, 0).vision_seconds, v1 = sim->at(0, 0, 1).vision_seconds;
    max_vision[static_cast<int>(policy)] = std::max(v0, v1);
    const double l0 = sim->at(0, 0, 0).llm_seconds, l1 = sim->at(0, 0, 1).llm_seconds;
    // The zigzag split gives both ranks the same LLM work; the shares add up.
    EXPECT_NEAR(l0, l1, 1e-9);
    EXPECT_NEAR(l0 + l1, 4 * (1 + params.cp_llm_overhead), 1e-9);
    // So do their causal pairs: the 4096-token sample's 4096·4097/2, zigzag-split evenly.
    const double p0 = sim->at(0, 0, 0).attention_pairs, p1 = sim->at(0, 0, 1).attention_pairs;
    EXPECT_DOUBLE_EQ(p0 + p1, 4096.0 * 4097 / 2);
    EXPECT_NEAR(p0, p1, 1e-9 * p0);
    if (policy != cp::VisionPolicy::kNaive) {
      EXPECT_NEAR(v0 + v1, 12 * (1 + params.vision_dp_exchange_overhead), 1e-9);
    }
    ASSERT_EQ(sim->cp_vision_imbalance.size(), 1u);
    EXPECT_GE(sim->cp_vision_imbalance[0], 1.0);
  }
  const double x = 1 + params.vision_dp_exchange_overhead;
  // Count: images 0–2 (8 + 1 + 1 = 10 of 12 FLOPs) on rank 0 → 10 s.
  EXPECT_NEAR(max_vision[1], 10 * x, 1e-9);
  // Cost: the large image alone (8 s), the four small ones (4 s) on the other rank.
  EXPECT_NEAR(max_vision[2], 8 * x, 1e-9);
  EXPECT_LT(max_vision[2], max_vision[1]);
}

TEST(StepModelTest, AtomicBoundCountsIndivisibleImagesAndPacks) {
  // One pack on CP 2 under the cost policy: a giant image (10 of 11 s) that one rank must
  // encode whole, and a small one the other rank takes. Perfect balance would split the 11 s;
  // no assignment can: the group waits 10 s (× the exchange's 1.02), then 4 s of LLM halved.
  plan::Layout layout{.dp = 1, .cp = 2, .ga = 1, .seq_len = 4096, .sync = plan::SyncModel::kStep};
  auto plan =
      MakePlan(layout, {PackSpec{{4096}, {{2000, 10}, {100, 1}}, 11, 4}}, cp::VisionPolicy::kCost);
  SimParams params;
  auto sim = SimulateStep(plan, params);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  const double x = 1 + params.vision_dp_exchange_overhead, llm = 4 * (1 + params.cp_llm_overhead);
  EXPECT_NEAR(sim->lower_bound_seconds, (11 * x + llm) / 2, 1e-9);
  EXPECT_NEAR(sim->atomic_lower_bound_seconds, 10 * x + llm / 2, 1e-9);
  EXPECT_NEAR(sim->step_seconds, sim->atomic_lower_bound_seconds, 1e-9);
  // Micro-step sync, two DP ranks of one sync group, two micro-steps: every micro-step waits
  // for its heaviest pack in each stage. Packs sorted by vision (8, 1 | 0, 0) and by LLM
  // (8, 1 | 1, 1) give 8 + 0 and 8 + 1: 17, above every GPU busy ((9 + 11) / 2 = 10).
  plan::Layout sync{.dp = 2, .ep = 2, .ga = 2, .seq_len = 1024};
  auto barriers = MakePlan(sync, {PackSpec{{100}, {{50}}, 8, 1}, PackSpec{{100}, {}, 0, 8},
                                  PackSpec{{100}, {{50}}, 1, 1}, PackSpec{{100}, {}, 0, 1}});
  sim = SimulateStep(barriers, params);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  EXPECT_DOUBLE_EQ(sim->lower_bound_seconds, 10.0);
  EXPECT_DOUBLE_EQ(sim->atomic_lower_bound_seconds, 17.0);
  EXPECT_GE(sim->step_seconds, sim->atomic_lower_bound_seconds);
}

TEST(StepModelTest, RejectsBadParams) {
  plan::Layout layout{.dp = 1, .ga = 1, .seq_len = 1024, .sync = plan::SyncModel::kStep};
  auto plan = MakePlan(layout, {PackSpec{{100}, {}, 0, 1}});
  SimParams params;
  params.vision_speed_factor = 0;
  auto status = SimulateStep(plan, params).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("vision_speed_factor"), std::string::npos);
  params = SimParams{};
  params.cp_llm_overhead = -1;
  EXPECT_FALSE(SimulateStep(plan, params).ok());
  EXPECT_NE(SimParams{}.Describe().find("vision_speed_factor"), std::string::npos);
  params = SimParams{};
  plan.cp.clear();  // a plan without its cp stage has nothing to evaluate
  status = SimulateStep(plan, params).status();
  EXPECT_NE(status.message().find("cp stage"), std::string::npos) << status.ToString();
}

}  // namespace
}  // namespace mmpt::sim
