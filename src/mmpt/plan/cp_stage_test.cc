#include "mmpt/plan/cp_stage.h"

#include <gtest/gtest.h>

namespace mmpt::plan {
namespace {

// One DP rank, one micro-step: a pack of two samples, the first with a 600-token and a
// 100-token image (vision FLOPs 6 and 1), the second text only.
StepPlan TwoSamplePlan(uint32_t cp) {
  StepPlan plan;
  plan.layout = Layout{.dp = 1, .cp = cp, .ga = 1, .seq_len = 2048, .sync = SyncModel::kStep};
  plan.images = {PlannedImage{.llm_tokens = 600, .token_start = 100, .vision_flops = 6},
                 PlannedImage{.llm_tokens = 100, .token_start = 800, .vision_flops = 1}};
  plan.sequences = {PlannedSequence{.tokens = 1000, .image_begin = 0, .image_end = 2},
                    PlannedSequence{.tokens = 1000, .image_begin = 2, .image_end = 2}};
  plan.packs = {PlannedPack{.sequence_begin = 0,
                            .sequence_end = 2,
                            .tokens = 2000,
                            .images = 2,
                            .vision_seconds = 7,
                            .llm_seconds = 3}};
  return plan;
}

TEST(CpStageTest, InputTakesThePlannedPositionsAndSharesVisionSecondsByFlops) {
  StepPlan plan = TwoSamplePlan(2);
  plan.images[1].token_start = 750;  // not where an even spread would put it
  PackCpInput input = MakePackCpInput(plan, 0);
  EXPECT_EQ(input.lengths, (std::vector<uint32_t>{1000, 1000}));
  ASSERT_EQ(input.images.size(), 2u);
  EXPECT_DOUBLE_EQ(input.images[0].vision_cost, 6.0);  // 7 s × 6/7
  EXPECT_DOUBLE_EQ(input.images[1].vision_cost, 1.0);
  EXPECT_EQ(input.images[0].token_start, 100u);
  EXPECT_EQ(input.images[1].token_start, 750u);

  // Without the first sample (dropped at load time) the second starts the pack.
  const std::vector<uint8_t> kept = {0, 1};
  PackCpInput rest = MakePackCpInput(plan, 0, kept);
  EXPECT_EQ(rest.lengths, (std::vector<uint32_t>{1000}));
  EXPECT_TRUE(rest.images.empty());
}

TEST(CpStageTest, FillsEveryPackAtEveryCpSize) {
  StepPlan plan = TwoSamplePlan(2);
  ASSERT_TRUE(AddCpStage(plan, cp::VisionPolicy::kCost).ok());
  ASSERT_EQ(plan.cp.size(), 1u);
  const PackCp& pack = plan.cp[0];
  EXPECT_EQ(pack.split.cu_seqlens_padded, (std::vector<uint32_t>{0, 1000, 2000}));
  // Cost policy: the 6 s image alone on one rank.
  EXPECT_DOUBLE_EQ(pack.vision.max_cost(), 6.0);
  EXPECT_EQ(pack.vision.encoders[0].size(), 1u);
  EXPECT_TRUE(plan.Validate().ok());

  StepPlan flat = TwoSamplePlan(1);
  ASSERT_TRUE(AddCpStage(flat, cp::VisionPolicy::kCost).ok());
  ASSERT_EQ(flat.cp.size(), 1u);
  EXPECT_EQ(flat.cp[0].split.cp, 1u);
  EXPECT_EQ(flat.cp[0].vision.encoders.values, (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(flat.cp[0].vision.encoders.size(), 2u);
  // The plan's hash covers the cp stage's decisions.
  StepPlan other = TwoSamplePlan(1);
  ASSERT_TRUE(AddCpStage(other, cp::VisionPolicy::kCost).ok());
  EXPECT_EQ(flat.Hash(), other.Hash());
  other.images[1].token_start = 799;
  EXPECT_NE(flat.Hash(), other.Hash());
}

TEST(CpStageTest, NamesThePackOfBadImages) {
  StepPlan plan = TwoSamplePlan(2);
  plan.images[1].llm_tokens = 500;  // past the end of its sample
  auto status = AddCpStage(plan, cp::VisionPolicy::kCost);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("pack 0"), std::string::npos) << status.message();
}

TEST(CpStageTest, VisionItemsAreImagesThenVideosEachInPackOrder) {
  const std::vector<uint8_t> is_video = {1, 0, 0, 1, 0};
  EXPECT_EQ(VisionItemOrder(is_video), (std::vector<uint32_t>{1, 2, 4, 0, 3}));
  EXPECT_TRUE(VisionItemOrder({}).empty());
}

TEST(CpStageTest, SequenceParallelPadsToTwiceTpCp) {
  StepPlan plan = TwoSamplePlan(2);
  plan.layout.tp = 4;
  EXPECT_TRUE(plan.layout.SplitOptions().sequence_parallel);
  EXPECT_EQ(plan.layout.PadMultiple(), 16u);
  ASSERT_TRUE(AddCpStage(plan, cp::VisionPolicy::kCount).ok());
  EXPECT_EQ(plan.cp[0].split.pad_multiple, plan.layout.PadMultiple());
  EXPECT_EQ(plan.cp[0].split.cu_seqlens_padded, (std::vector<uint32_t>{0, 1008, 2016}));
}

}  // namespace
}  // namespace mmpt::plan
