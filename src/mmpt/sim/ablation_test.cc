#include "mmpt/sim/ablation.h"

#include <gtest/gtest.h>

#include "mmpt/sim/test_plans_test_util.h"

namespace mmpt::sim {
namespace {

using testing_plans::MakePlan;
using testing_plans::PackSpec;

// dp 2, ga 2, CP 2, microstep sync with ep 2. Vanilla: half-full packs. mmpt: full packs.
plan::Layout TestLayout() {
  return plan::Layout{
      .dp = 2, .cp = 2, .ep = 2, .ga = 2, .seq_len = 2048, .sync = plan::SyncModel::kMicrostep};
}

PackSpec Heavy() { return PackSpec{{1024, 1024}, {{600, 6}, {100, 1}, {100, 1}}, 8, 4}; }
PackSpec Light() { return PackSpec{{1024, 1024}, {{100, 1}}, 1, 4}; }

TEST(AblationTest, StagesAreComputedFromThePlans) {
  const plan::Layout layout = TestLayout();
  PlanSource vanilla = [&]() -> Result<plan::StepPlan> {
    PackSpec half{{1024}, {{600, 6}, {100, 1}}, 6, 2};
    return MakePlan(layout, {half, half, PackSpec{{1024}, {{100, 1}}, 1, 2}, half});
  };
  uint64_t step = 0;
  PolicyPlanSource mmpt = [&](cp::VisionPolicy policy) -> Result<plan::StepPlan> {
    // Balanced for micro-step sync: the two heavy packs share micro-step 0, so only one
    // micro-step waits on heavy vision.
    auto plan = MakePlan(layout, {Heavy(), Light(), Heavy(), Light()}, policy);
    plan.step = step++;
    return plan;
  };
  AblationOptions options;
  options.steps = 3;
  // Unmeasured on this hardware: no native-encoder stage.
  auto unmeasured = RunAblation(vanilla, mmpt, options);
  ASSERT_TRUE(unmeasured.ok()) << unmeasured.status().ToString();
  ASSERT_EQ(unmeasured->rows.size(), 5u);
  EXPECT_EQ(unmeasured->rows[3].stage, "+ vision DP when CP (by cost, mmpt)");
  EXPECT_NE(unmeasured->parameters.find("not measured on this hardware"), std::string::npos);
  step = 0;
  options.native_encoder_factor = 1.5;  // as a hardware preset that measured it says
  auto ablation = RunAblation(vanilla, mmpt, options);
  ASSERT_TRUE(ablation.ok()) << ablation.status().ToString();
  ASSERT_EQ(ablation->rows.size(), 6u);
  // The costed vision time is the native encoder's: from it on, nothing depends on the factor.
  EXPECT_DOUBLE_EQ(ablation->rows[3].tokens_per_second, unmeasured->rows[2].tokens_per_second);
  EXPECT_EQ(ablation->rows[0].stage, "vanilla");
  EXPECT_DOUBLE_EQ(ablation->rows[0].relative, 1.0);
  EXPECT_EQ(ablation->rows[4].stage, "+ vision DP when CP (by cost, mmpt)");
  EXPECT_FALSE(ablation->rows[5].cumulative);
  // Each recomputed from its own simulation: the stages before the native encoder run a
  // slower one, so it can only help; reordering a balanced plan beats or equals any deal of it.
  EXPECT_GE(ablation->rows[2].tokens_per_second, ablation->rows[1].tokens_per_second);
  EXPECT_GT(ablation->rows[3].tokens_per_second, ablation->rows[2].tokens_per_second);
  EXPECT_GE(ablation->rows[4].tokens_per_second, ablation->rows[5].tokens_per_second);
  // Full packs train twice the tokens of the half-full vanilla ones.
  EXPECT_GT(ablation->rows[1].relative, 1.0);
  ASSERT_EQ(ablation->policies.size(), 3u);
  EXPECT_LT(ablation->policies[2].mean_imbalance, ablation->policies[1].mean_imbalance);
  EXPECT_NE(ablation->parameters.find("native_encoder_factor"), std::string::npos);
  EXPECT_EQ(ablation->cp, 2u);
}

TEST(AblationTest, DealInPackingOrderKeepsEveryPack) {
  const plan::Layout layout = TestLayout();
  // Largest samples: 1024 (heavy), 1024, 1024, 1024 — make them differ so the order is known.
  PackSpec a{{1500, 500}, {{100, 1}}, 1, 4}, b{{1200, 800}, {{100, 1}}, 2, 4};
  PackSpec c{{1900, 100}, {{100, 1}}, 3, 4}, d{{1000, 1000}, {{100, 1}}, 4, 4};
  auto plan = MakePlan(layout, {a, b, c, d});
  plan::StepPlan dealt = plan::DealInPackingOrder(plan);
  ASSERT_TRUE(dealt.Validate().ok()) << dealt.Validate().ToString();
  // Packing order c (1900), a (1500), b (1200), d (1000): micro-step 0 of ranks 0 and 1 get c
  // and a, micro-step 1 gets b and d.
  EXPECT_DOUBLE_EQ(dealt.Pack(0, 0).vision_seconds, 3);
  EXPECT_DOUBLE_EQ(dealt.Pack(1, 0).vision_seconds, 1);
  EXPECT_DOUBLE_EQ(dealt.Pack(0, 1).vision_seconds, 2);
  EXPECT_DOUBLE_EQ(dealt.Pack(1, 1).vision_seconds, 4);
  EXPECT_EQ(dealt.images.size(), plan.images.size());
  EXPECT_EQ(dealt.sequences[0].tokens, 1900u);
  EXPECT_EQ(DealInPackingOrder(plan).Hash(), dealt.Hash());
}

// Videos and audio clips move with their sample, as images do.
TEST(AblationTest, DealInPackingOrderMovesVideosAndAudioWithTheirSamples) {
  PackSpec small{{1000, 1000}, {{100, 1}}, 1, 4}, large{{1900, 100}, {{100, 1}}, 3, 4};
  auto plan = MakePlan(TestLayout(), {small, large, small, small});
  // The 1900-token sample (pack 1's first) holds a video and an audio clip.
  const size_t holder = plan.packs[1].sequence_begin;
  for (plan::PlannedSequence& seq : plan.sequences) {
    seq.video_begin = seq.video_end = seq.audio_begin = seq.audio_end =
        &seq - plan.sequences.data() > static_cast<ptrdiff_t>(holder) ? 1 : 0;
  }
  plan.videos.push_back(plan::PlannedVideo{.frames = 4, .llm_tokens = 50, .token_start = 0});
  plan.audios.push_back(plan::PlannedAudio{.llm_tokens = 25, .token_start = 60});
  plan.sequences[holder].video_end = plan.sequences[holder].audio_end = 1;
  plan::StepPlan dealt = plan::DealInPackingOrder(plan);
  ASSERT_TRUE(dealt.Validate().ok()) << dealt.Validate().ToString();
  ASSERT_EQ(dealt.videos.size(), 1u);
  ASSERT_EQ(dealt.audios.size(), 1u);
  const plan::PlannedSequence& first = dealt.sequences[0];  // packing order: the 1900 first
  EXPECT_EQ(first.tokens, 1900u);
  EXPECT_EQ(dealt.Videos(first).size(), 1u);
  EXPECT_EQ(dealt.Audios(first).size(), 1u);
  EXPECT_EQ(dealt.Videos(first)[0].llm_tokens, 50u);
}

TEST(AblationTest, EachStageComesFromThePlannerOfItsPolicy) {
  // Under CP the planner balances what its policy makes each pack cost: the naive planner's
  // plans make the stages before vision DP, the cost planner's the vision-DP stage, the count
  // planner's its alternative. Here each policy's plans deal the packs differently.
  const plan::Layout layout = TestLayout();
  PlanSource vanilla = [&]() -> Result<plan::StepPlan> {
    return MakePlan(layout, {Heavy(), Light(), Heavy(), Light()});
  };
  std::vector<cp::VisionPolicy> asked;
  PolicyPlanSource mmpt = [&](cp::VisionPolicy policy) -> Result<plan::StepPlan> {
    asked.push_back(policy);
    if (policy == cp::VisionPolicy::kCost) {
      return MakePlan(layout, {Heavy(), Light(), Heavy(), Light()}, policy);
    }
    return MakePlan(layout, {Heavy(), Heavy(), Light(), Light()}, policy);
  };
  AblationOptions options;
  options.steps = 2;
  auto ablation = RunAblation(vanilla, mmpt, options);
  ASSERT_TRUE(ablation.ok()) << ablation.status().ToString();
  const std::vector<cp::VisionPolicy> each = {cp::VisionPolicy::kNaive, cp::VisionPolicy::kCount,
                                              cp::VisionPolicy::kCost};
  std::vector<cp::VisionPolicy> want;
  for (uint32_t s = 0; s < options.steps; ++s) want.insert(want.end(), each.begin(), each.end());
  EXPECT_EQ(asked, want);
  SimParams native = options.params;
  auto cost = SimulateStep(*mmpt(cp::VisionPolicy::kCost), native);
  auto count = SimulateStep(*mmpt(cp::VisionPolicy::kCount), native);
  auto naive = SimulateStep(*mmpt(cp::VisionPolicy::kNaive), native);
  ASSERT_TRUE(cost.ok() && count.ok() && naive.ok());
  EXPECT_DOUBLE_EQ(ablation->rows[3].step_seconds, cost->step_seconds);
  EXPECT_DOUBLE_EQ(ablation->rows[4].step_seconds, count->step_seconds);
  EXPECT_DOUBLE_EQ(ablation->rows[2].step_seconds, naive->step_seconds);
  EXPECT_NE(cost->step_seconds, count->step_seconds);
}

TEST(AblationTest, RefusesAPlanThatDoesNotExecuteItsStagesPolicy) {
  const plan::Layout layout = TestLayout();
  PlanSource plans = [&]() -> Result<plan::StepPlan> {
    return MakePlan(layout, {Heavy(), Light(), Heavy(), Light()});  // naive
  };
  auto result = RunAblation(plans, [&](cp::VisionPolicy) { return plans(); }, {});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("the count planner's plan assigns images by naive"),
            std::string::npos)
      << result.status().ToString();
}

TEST(AblationTest, PropagatesPlanErrors) {
  PlanSource failing = []() -> Result<plan::StepPlan> {
    return Status::InvalidArgument("corpus too small");
  };
  auto result = RunAblation(failing, [&](cp::VisionPolicy) { return failing(); }, {});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("corpus too small"), std::string::npos);
}

}  // namespace
}  // namespace mmpt::sim
