// The planner on corpora built from ../shared/data/real (COCO caption pairs, mmc4 documents,
// and a pretraining-like mix with text-only documents). These fail, not skip, when the real
// data is absent.
#include "mmpt/corpora/real_corpora.h"

#include <gtest/gtest.h>
#include <algorithm>

#include "mmpt/corpora/real_data.h"
#include "mmpt/plan/compare.h"
#include "mmpt/plan/planner.h"
#include "mmpt/sim/corpus_ablation.h"

namespace mmpt::corpora {

// Moved here from the plan module; its names are used unqualified.
using namespace mmpt::plan;
namespace {

TEST(RealCorporaTest, CorporaHaveTheDocumentedShape) {
  auto coco = CocoCaptionsCorpus();
  ASSERT_TRUE(coco.ok()) << coco.status().ToString();
  EXPECT_EQ(coco->num_samples(), 25014u);
  EXPECT_EQ(coco->num_images(), 25014u);
  auto mmc4 = Mmc4DocumentsCorpus();
  ASSERT_TRUE(mmc4.ok()) << mmc4.status().ToString();
  EXPECT_EQ(mmc4->num_samples(), 107u);
  for (uint64_t r = 0; r < mmc4->num_samples(); ++r) {
    EXPECT_GE(mmc4->ImagesOf(r).size(), 2u);
    EXPECT_LE(mmc4->ImagesOf(r).size(), 12u);
  }
  auto mix = PretrainingMixCorpus();
  ASSERT_TRUE(mix.ok());
  ASSERT_EQ(mix->num_sources(), 4u);
  EXPECT_EQ(mix->source_names[3], "text-long");
  EXPECT_EQ(mix->source_size(2), 107u);
  EXPECT_EQ(mix->ImagesOf(mix->source_begin[2]).size(), 0u);  // text-only
  // mmc4 images take real COCO sizes by the seeded rule: same seed, same sizes; another seed,
  // others.
  auto again = Mmc4DocumentsCorpus(corpora::RealDataDir(), 1);
  auto other = Mmc4DocumentsCorpus(corpora::RealDataDir(), 2);
  ASSERT_TRUE(again.ok() && other.ok());
  EXPECT_EQ(again->images[0].width, mmc4->images[0].width);
  bool differs = false;
  for (size_t i = 0; i < 10; ++i) {
    differs |= other->images[i].width != mmc4->images[i].width ||
               other->images[i].height != mmc4->images[i].height;
  }
  EXPECT_TRUE(differs);
  for (uint64_t i = 0; i < mmc4->num_images(); ++i) {
    bool is_coco_size = false;
    for (const cost::ImageSize& c : coco->images) {
      is_coco_size |= c.width == mmc4->images[i].width && c.height == mmc4->images[i].height;
    }
    ASSERT_TRUE(is_coco_size) << "mmc4 image " << i;
  }
  // Image j of document d has the size of COCO image corpora::Mmc4CocoImage(1, d, j).
  auto files = corpora::ReadCocoCaptions(corpora::RealDataPath(corpora::kCocoCaptionsFile));
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  const uint64_t k = corpora::Mmc4CocoImage(1, 3, 1, files->images.size());
  EXPECT_EQ(mmc4->ImagesOf(3)[1].width, files->images[k].width);
  EXPECT_EQ(mmc4->ImagesOf(3)[1].height, files->images[k].height);
  EXPECT_EQ(CocoCaptionsCorpus("/nonexistent").status().code(), StatusCode::kNotFound);
}

// Photo posts: a COCO caption with 2 to 6 photos at Open Images sizes, drawn by the seed, the
// text the chat template renders for that many images.
TEST(RealCorporaTest, PhotoPostsHaveTheDocumentedShape) {
  auto photos = PhotoPostsCorpus();
  auto coco = CocoCaptionsCorpus();
  ASSERT_TRUE(photos.ok() && coco.ok()) << photos.status().ToString();
  ASSERT_EQ(photos->num_samples(), 25014u);
  std::vector<uint64_t> by_count(7, 0);
  for (uint64_t r = 0; r < photos->num_samples(); ++r) {
    const size_t count = photos->ImagesOf(r).size();
    ASSERT_GE(count, 2u);
    ASSERT_LE(count, 6u);
    ++by_count[count];
    for (uint32_t j = 0; j < count; ++j) {
      const cost::ImageSize image = photos->ImagesOf(r)[j];
      EXPECT_EQ(std::max(image.width, image.height), 1024u);
      EXPECT_GE(std::min(image.width, image.height), 576u);
      EXPECT_EQ(image.width, OpenImagesPhoto(1, r, j).width);
      EXPECT_EQ(image.height, OpenImagesPhoto(1, r, j).height);
    }
    // Each photo beyond the first adds its two markers to the caption pair's text.
    ASSERT_EQ(photos->text_tokens[r], coco->text_tokens[r] + 2 * (count - 1)) << "row " << r;
  }
  for (size_t count = 2; count <= 6; ++count) EXPECT_NEAR(by_count[count], 25014 / 5, 300);
  auto again = PhotoPostsCorpus(corpora::RealDataDir(), 1);
  auto other = PhotoPostsCorpus(corpora::RealDataDir(), 2);
  ASSERT_TRUE(again.ok() && other.ok());
  EXPECT_TRUE(std::ranges::equal(again->bytes(), photos->bytes()));
  EXPECT_FALSE(std::ranges::equal(other->image_begin, photos->image_begin));
  auto builtin = LoadBuiltinCorpus("photos");
  ASSERT_TRUE(builtin.ok());
  EXPECT_TRUE(std::ranges::equal(builtin->table.bytes(), photos->bytes()));
  EXPECT_TRUE(builtin->weights.empty());
  EXPECT_EQ(LoadBuiltinCorpus("mix")->weights.size(), 4u);
  EXPECT_EQ(LoadBuiltinCorpus("nope").status().code(), StatusCode::kInvalidArgument);
}

// Built-in corpora count text with the real tokenizer: a caption pair is exactly what the chat
// template renders (default system turn, roles, image markers; the image's pads excluded), and
// an mmc4 document is its sentences' tokens plus two markers per image and one end token.
TEST(RealCorporaTest, TextTokensComeFromTheRealTokenizerAndTemplate) {
  auto tokenizer = CorpusTokenizer::Default();
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  auto model = text::LoadTokenizer(text::FindTokenizer().ValueOrDie());
  ASSERT_TRUE(model.ok());
  auto files = corpora::ReadCocoCaptions(corpora::RealDataPath(corpora::kCocoCaptionsFile));
  auto coco = CocoCaptionsCorpus();
  ASSERT_TRUE(files.ok() && coco.ok());
  const std::vector<std::string> captions = files->CaptionTexts();
  for (size_t k : {size_t{0}, size_t{1}, size_t{777}, captions.size() - 1}) {
    // The string the Qwen-VL template writes for the pair, image pads left out.
    auto rendered = (*model)->Encode(
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        "<|vision_start|><|vision_end|><|im_end|>\n<|im_start|>assistant\n" +
        captions[k] + "<|im_end|>\n");
    ASSERT_TRUE(rendered.ok());
    EXPECT_EQ(coco->text_tokens[k], rendered->size()) << "caption " << k;
    auto caption_tokens = (*model)->Count(captions[k]);
    ASSERT_TRUE(caption_tokens.ok());
    EXPECT_GT(coco->text_tokens[k], *caption_tokens + 20) << "system, roles and markers";
  }
  auto docs = corpora::ReadMmc4Documents(corpora::RealDataPath(corpora::kMmc4DocsFile));
  auto mmc4 = Mmc4DocumentsCorpus();
  ASSERT_TRUE(docs.ok() && mmc4.ok());
  ASSERT_EQ(docs->size(), mmc4->num_samples());
  for (size_t d : {size_t{0}, size_t{50}, docs->size() - 1}) {
    uint64_t tokens = 0;
    for (const std::string& sentence : (*docs)[d].sentences) tokens += *(*model)->Count(sentence);
    EXPECT_EQ(mmc4->text_tokens[d], tokens + 2 * mmc4->ImagesOf(d).size() + 1) << "doc " << d;
  }
  EXPECT_EQ((*tokenizer)->image_marker_tokens(), 2u);
  EXPECT_EQ(CorpusTokenizer::Load("/nonexistent/tokenizer.json").status().code(),
            StatusCode::kNotFound);
}

// A smaller layout (4 EP groups of 4, GA 64) keeps this in the unit tier. GA is large enough
// that vanilla's per-rank buffers (1024 samples, ~40 packs) turn over within the run: with a
// short run vanilla only ever trains on the first, fullest packs of each buffer. A step draws
// ~500 of the 107 mmc4 documents (weight 0.10): repeats are allowed.
TEST(RealCorporaTest, MixPlansFullPacksNearTheBoundAndBeatsVanilla) {
  auto mix = PretrainingMixCorpus();
  auto model = cost::CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  ASSERT_TRUE(mix.ok() && model.ok());
  PlannerConfig config;
  config.layout.dp = 16;
  config.layout.ep = 4;
  config.layout.ga = 64;
  config.allow_repeat = true;
  config.source_weights.assign(std::begin(kPretrainingMixWeights),
                               std::end(kPretrainingMixWeights));
  auto c = ComparePlanners(*mix, *model, config, 4);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GE(c->mmpt.efficiency, 0.995);
  EXPECT_LE(c->mmpt.step_seconds / c->mmpt.lower_bound_seconds, 1.05);
  EXPECT_LT(c->mmpt.step_seconds, c->vanilla.step_seconds);
  EXPECT_GT(c->throughput_speedup(), 1.0);
}

// Photo posts (items a fifth to four fifths of a pack), at a smaller layout than the seed's to
// stay in the unit tier: over 16 steps (about 12 epochs) mmpt packs fuller than vanilla, and with
// its carried samples packed it is within 0.2 point of the LP bound (below it: the bound is
// valid), which is itself far from 100% (photo posts over half a pack leave room only for the
// small posts that fit beside them). In the ablation at CP 1 '+ global packing' (mmpt's packs in
// packing order, before reordering) does not lose to vanilla. At CP 2 this layout loses 0.7%
// (docs/benchmarks.md): not yet fixed, so not asserted.
TEST(RealCorporaTest, PhotoPostsPackWithinAFifthOfAPointOfTheBound) {
  auto photos = PhotoPostsCorpus();
  auto model = cost::CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  ASSERT_TRUE(photos.ok() && model.ok());
  PlannerConfig config;
  config.layout.dp = 16;
  config.layout.ep = 4;
  config.layout.ga = 64;
  config.allow_repeat = true;
  auto c = ComparePlanners(*photos, *model, config, 16);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GT(c->mmpt.efficiency, c->vanilla.efficiency);
  EXPECT_LE(c->mmpt_limit.settled, c->mmpt_limit.bound + 1e-9);
  EXPECT_GE(c->mmpt_limit.settled, c->mmpt_limit.bound - 0.002);
  EXPECT_LT(c->mmpt_limit.bound, 0.985);
  EXPECT_LE(c->mmpt.step_seconds, 1.01 * c->mmpt.lower_bound_seconds);
  auto ablation = sim::RunCorpusAblation(*photos, *model, config, {});
  ASSERT_TRUE(ablation.ok()) << ablation.status().ToString();
  ASSERT_EQ(ablation->rows[1].stage, "+ global packing");
  EXPECT_GE(ablation->rows[1].tokens_per_second, ablation->rows[0].tokens_per_second);
}

// The seed's configuration: EP 8, TP/PP/CP 1, GA 128, DP 64, a 30B-A3B MoE LLM with a
// Qwen2.5-VL encoder on B200, sequence length 8192 — on each real corpus. A step (8192 packs)
// holds several times each corpus: repeats are allowed.
class RealCorporaSlow : public ::testing::TestWithParam<const char*> {};

TEST_P(RealCorporaSlow, SeedConfigurationIsFullAndWithinThreePercentOfTheBound) {
  std::string name = GetParam();
  auto table = name == "coco"   ? CocoCaptionsCorpus()
               : name == "mmc4" ? Mmc4DocumentsCorpus()
                                : PretrainingMixCorpus();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  auto model = cost::CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  ASSERT_TRUE(model.ok());
  PlannerConfig config;
  config.layout.dp = 64;
  config.layout.ep = 8;
  config.layout.ga = 128;
  config.layout.seq_len = 8192;
  config.allow_repeat = true;
  if (name == "mix") {
    config.source_weights.assign(std::begin(kPretrainingMixWeights),
                                 std::end(kPretrainingMixWeights));
  }
  auto c = ComparePlanners(*table, *model, config, 2);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::printf("%s: packing %.4f (vanilla %.4f), throughput x%.3f\n", name.c_str(),
              c->mmpt.efficiency, c->vanilla.efficiency, c->throughput_speedup());
  // The target on every corpus: 99.5% (the seed reached 99.4%).
  EXPECT_GE(c->mmpt.efficiency, 0.995);
  EXPECT_LE(c->mmpt.step_seconds, 1.03 * c->mmpt.lower_bound_seconds);
  EXPECT_LE(c->mmpt.step_seconds, c->vanilla.step_seconds);

  // The planner's state at this scale stays a few KB.
  auto planner = Planner::Create(*table, *model, config);
  ASSERT_TRUE(planner.ok());
  for (int s = 0; s < 2; ++s) ASSERT_TRUE(planner->PlanStep().ok());
  std::string state = planner->SaveState();
  std::printf("%s: planner state %zu bytes, %zu samples carried\n", name.c_str(), state.size(),
              planner->carried().size());
  EXPECT_LT(state.size(), 16384u);
  // Inside a step, half way, the state also lists the step's undelivered samples (for a restore
  // under another layout): a few bytes each.
  auto plan = planner->PlanStep();
  ASSERT_TRUE(plan.ok());
  auto within = planner->StateWithinStep(state, planner->SaveState(), *plan, config.layout.ga / 2);
  ASSERT_TRUE(within.ok()) << within.status().ToString();
  std::printf("%s: planner state half way through a step %zu bytes (%zu samples in the step)\n",
              name.c_str(), within->size(), plan->sequences.size());
  EXPECT_LT(within->size(), 2 * state.size() + 4 * plan->sequences.size());
}

INSTANTIATE_TEST_SUITE_P(Corpora, RealCorporaSlow, ::testing::Values("coco", "mmc4", "mix"));

}  // namespace
}  // namespace mmpt::corpora
