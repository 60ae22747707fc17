#include "mmpt/plan/step_plan.h"

#include <gtest/gtest.h>

namespace mmpt::plan {
namespace {

// A 2-rank, 1-micro-step plan: rank 0 holds two samples (one with an image), rank 1 one.
StepPlan TwoRankPlan() {
  StepPlan plan;
  plan.layout.dp = 2;
  plan.layout.ep = 2;
  plan.layout.seq_len = 100;
  plan.images.push_back({.width = 640,
                         .height = 480,
                         .resized_width = 56,
                         .resized_height = 56,
                         .llm_tokens = 4,
                         .token_start = 30,
                         .patches = 16,
                         .vision_flops = 1e12});
  plan.sequences.push_back({7, 0, 60, 60, 0, 0, false});
  plan.sequences.push_back({3, 1, 40, 36, 0, 1, false});
  plan.sequences.push_back({9, 0, 100, 100, 1, 1, true});
  plan.packs.push_back({0, 2, 100, 1, 0.5, 1.0});
  plan.packs.push_back({2, 3, 100, 0, 0.0, 1.2});
  return plan;
}

TEST(StepPlanTest, ValidPlanPassesAndIndexesByRank) {
  StepPlan plan = TwoRankPlan();
  ASSERT_TRUE(plan.Validate().ok()) << plan.Validate().ToString();
  EXPECT_EQ(plan.RankPacks(1).size(), 1u);
  EXPECT_EQ(plan.Sequences(plan.Pack(0, 0)).size(), 2u);
  EXPECT_EQ(plan.Images(plan.sequences[1]).size(), 1u);
  EXPECT_EQ(plan.Images(plan.sequences[1])[0].llm_tokens, 4u);
}

TEST(StepPlanTest, ValidateCatchesImagesOutsideTheirSample) {
  StepPlan plan = TwoRankPlan();
  plan.images[0].token_start = 37;  // 37 + 4 tokens leave the 40-token sample
  Status status = plan.Validate();
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_NE(status.message().find("pack 0"), std::string::npos) << status.ToString();
}

TEST(StepPlanTest, ValidateCatchesOverlongPackAndBadCounts) {
  StepPlan plan = TwoRankPlan();
  plan.sequences[2].tokens = 101;
  plan.packs[1].tokens = 101;
  EXPECT_EQ(plan.Validate().code(), StatusCode::kInternal);
  plan = TwoRankPlan();
  plan.packs.pop_back();
  EXPECT_FALSE(plan.Validate().ok());
  plan = TwoRankPlan();
  plan.packs[0].images = 2;
  EXPECT_FALSE(plan.Validate().ok());
}

TEST(StepPlanTest, HashSeesEveryPlacementButNotCosts) {
  StepPlan a = TwoRankPlan(), b = TwoRankPlan();
  EXPECT_EQ(a.Hash(), b.Hash());
  b.packs[0].vision_seconds = 9;  // derived cost: not part of the agreement
  EXPECT_EQ(a.Hash(), b.Hash());
  b.sequences[0].index = 8;
  EXPECT_NE(a.Hash(), b.Hash());
  b = TwoRankPlan();
  b.step = 1;
  EXPECT_NE(a.Hash(), b.Hash());
  b = TwoRankPlan();
  b.images[0].resized_width = 616;
  EXPECT_NE(a.Hash(), b.Hash());
  b = TwoRankPlan();
  b.images[0].token_start = 31;
  EXPECT_NE(a.Hash(), b.Hash());
}

TEST(StepPlanTest, LayoutRejectsImpossibleConfigs) {
  Layout layout;
  layout.dp = 6;
  layout.ep = 4;
  Status status = layout.Validate();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("not divisible by ep"), std::string::npos);
  layout.ep = 3;
  EXPECT_TRUE(layout.Validate().ok());
  layout.ga = 0;
  EXPECT_FALSE(layout.Validate().ok());
  layout.ga = 1;
  layout.sync = SyncModel::kPipeline;
  EXPECT_FALSE(layout.Validate().ok());  // pipeline needs pp > 1
  layout.sync = SyncModel::kMicrostep;
  const balance::Grid grid = layout.BalanceGrid();
  EXPECT_EQ(grid.group, 3u);  // sync groups of EP ranks
  EXPECT_EQ(grid.slots(), layout.packs_per_step());
  EXPECT_EQ(grid.sync, SyncModel::kMicrostep);
  EXPECT_EQ(layout.packs_per_step(), 6u);
}

// One rule for the padding multiple: the cp stage's split, the loader's estimate and Validate
// all read Layout::PadMultiple().
TEST(StepPlanTest, PadMultipleIsTwiceCpTimesTpUnderSequenceParallelism) {
  Layout layout;
  layout.cp = 2;
  EXPECT_EQ(layout.PadMultiple(), 4u);
  layout.tp = 2;  // TP 2 + CP 2: sequence parallelism pads to 2·TP·CP
  EXPECT_EQ(layout.PadMultiple(), 8u);
  EXPECT_EQ(layout.PadMultiple(), *cp::PadMultiple(layout.SplitOptions()));
  layout.seq_len = 8188;  // a multiple of 2·CP, not of 2·TP·CP
  Status status = layout.Validate();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("pad multiple 8"), std::string::npos) << status.message();
  layout.seq_len = 8192;
  EXPECT_TRUE(layout.Validate().ok());
}

TEST(StepPlanTest, SyncModelNamesRoundTrip) {
  for (SyncModel m : {SyncModel::kStep, SyncModel::kMicrostep, SyncModel::kPipeline}) {
    auto parsed = ParseSyncModel(SyncModelName(m));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, m);
  }
  EXPECT_FALSE(ParseSyncModel("bogus").ok());
}

}  // namespace
}  // namespace mmpt::plan
