// The planner on corpora built from ../shared/data/real (COCO caption pairs, mmc4 documents,
// and a pretraining-like mix with text-only documents). These fail, not skip, when the real
// data is absent.
#include "mmpt/plan/real_corpora.h"

#include <gtest/gtest.h>

#include "mmpt/plan/compare.h"
#include "mmpt/plan/planner.h"

namespace mmpt::plan {
namespace {

TEST(RealCorporaTest, CorporaHaveTheDocumentedShape) {
  auto coco = CocoCaptions();
  ASSERT_TRUE(coco.ok()) << coco.status().ToString();
  EXPECT_EQ(coco->num_samples(), 25014u);
  EXPECT_EQ(coco->num_images(), 25014u);
  auto mmc4 = Mmc4Documents();
  ASSERT_TRUE(mmc4.ok()) << mmc4.status().ToString();
  EXPECT_EQ(mmc4->num_samples(), 107u);
  for (uint64_t r = 0; r < mmc4->num_samples(); ++r) {
    EXPECT_GE(mmc4->ImagesOf(r).size(), 2u);
    EXPECT_LE(mmc4->ImagesOf(r).size(), 12u);
  }
  auto mix = PretrainingMix();
  ASSERT_TRUE(mix.ok());
  ASSERT_EQ(mix->num_sources(), 4u);
  EXPECT_EQ(mix->source_names[3], "text-long");
  EXPECT_EQ(mix->source_size(2), 107u);
  EXPECT_EQ(mix->ImagesOf(mix->source_begin[2]).size(), 0u);  // text-only
  // Drawn mmc4 sizes are seeded: same seed, same sizes; another seed, others.
  auto again = Mmc4Documents(RealDataDir(), 1), other = Mmc4Documents(RealDataDir(), 2);
  ASSERT_TRUE(again.ok() && other.ok());
  EXPECT_EQ(again->images[0].width, mmc4->images[0].width);
  EXPECT_FALSE(other->images[0].width == mmc4->images[0].width &&
               other->images[1].width == mmc4->images[1].width);
  EXPECT_EQ(CocoCaptions("/nonexistent").status().code(), StatusCode::kNotFound);
}

// A smaller layout (4 EP groups of 4, GA 64) keeps this in the unit tier. GA is large enough
// that vanilla's per-rank buffers (1024 samples, ~40 packs) turn over within the run: with a
// short run vanilla only ever trains on the first, fullest packs of each buffer.
TEST(RealCorporaTest, MixPlansFullPacksNearTheBoundAndBeatsVanilla) {
  auto mix = PretrainingMix();
  auto model = cost::CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  ASSERT_TRUE(mix.ok() && model.ok());
  PlannerConfig config;
  config.layout.dp = 16;
  config.layout.ep = 4;
  config.layout.ga = 64;
  config.source_weights.assign(std::begin(kPretrainingMixWeights),
                               std::end(kPretrainingMixWeights));
  auto c = ComparePlanners(*mix, *model, config, 4);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GE(c->mmpt.efficiency, 0.995);
  EXPECT_LE(c->mmpt.step_seconds / c->mmpt.lower_bound_seconds, 1.05);
  EXPECT_LT(c->mmpt.step_seconds, c->vanilla.step_seconds);
  EXPECT_GT(c->throughput_speedup(), 1.0);
  EXPECT_NE(FormatComparison(*c).find("vanilla"), std::string::npos);
  EXPECT_NE(ComparisonJson(*c).find("\"throughput_speedup\""), std::string::npos);
}

// The seed's configuration: EP 8, TP/PP/CP 1, GA 128, DP 64, a 30B-A3B MoE LLM with a
// Qwen2.5-VL encoder on B200, sequence length 8192 — on each real corpus.
class RealCorporaSlow : public ::testing::TestWithParam<const char*> {};

TEST_P(RealCorporaSlow, SeedConfigurationIsFullAndWithinThreePercentOfTheBound) {
  std::string name = GetParam();
  auto table = name == "coco" ? CocoCaptions() : name == "mmc4" ? Mmc4Documents() : PretrainingMix();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  auto model = cost::CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  ASSERT_TRUE(model.ok());
  PlannerConfig config;
  config.layout.dp = 64;
  config.layout.ep = 8;
  config.layout.ga = 128;
  config.layout.seq_len = 8192;
  if (name == "mix") {
    config.source_weights.assign(std::begin(kPretrainingMixWeights),
                                 std::end(kPretrainingMixWeights));
  }
  auto c = ComparePlanners(*table, *model, config, 2);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::printf("%s\n", FormatComparison(*c).c_str());
  // mmc4 alone is 107 documents of ~1k-8k tokens: too few small items to fill the last gaps of
  // each pack, so it reaches ~98.7% (vanilla ~98.75% over the same steps); the caption and
  // mixed corpora reach 99.5%.
  EXPECT_GE(c->mmpt.efficiency, name == "mmc4" ? 0.985 : 0.995);
  EXPECT_LE(c->mmpt.step_seconds, 1.03 * c->mmpt.lower_bound_seconds);
  EXPECT_LE(c->mmpt.step_seconds, c->vanilla.step_seconds);

  // The planner's state at this scale stays a few KB.
  auto costs = cost::CostSamples(*table, *model);
  ASSERT_TRUE(costs.ok());
  auto planner = Planner::Create(*table, *costs, *model, config);
  ASSERT_TRUE(planner.ok());
  for (int s = 0; s < 2; ++s) ASSERT_TRUE(planner->PlanStep().ok());
  std::string state = planner->SaveState();
  std::printf("%s: planner state %zu bytes, %zu samples carried\n", name.c_str(), state.size(),
              planner->carried().size());
  EXPECT_LT(state.size(), 16384u);
}

INSTANTIATE_TEST_SUITE_P(Corpora, RealCorporaSlow, ::testing::Values("coco", "mmc4", "mix"));

}  // namespace
}  // namespace mmpt::plan
