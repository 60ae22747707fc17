// Planning an omni corpus: images, videos and speech beside text, through pack ▸ balance ▸ cp.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "mmpt/plan/planner.h"
#include "mmpt/plan/vanilla.h"

namespace mmpt::plan {
namespace {

struct OmniCorpus {
  cost::SampleTable table;
  cost::CostModel model;
  cost::CostedSamples costs;
};

// Four sources: caption pairs, short videos, speech clips, text documents.
OmniCorpus MakeOmniCorpus(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> text(20, 200), side(200, 900), doc(500, 3000);
  std::uniform_int_distribution<uint32_t> seconds(2, 12), frames_per_second(24, 30);
  cost::SampleTableBuilder builder;
  const uint32_t captions = builder.AddSource("captions"), videos = builder.AddSource("videos"),
                 speech = builder.AddSource("speech"), docs = builder.AddSource("docs");
  for (int i = 0; i < 600; ++i) {
    cost::ImageSize image[] = {{side(rng), side(rng)}};
    EXPECT_TRUE(builder.Add(captions, text(rng), image).ok());
    const uint32_t fps = frames_per_second(rng), duration = seconds(rng);
    cost::VideoItem video[] = {{side(rng), side(rng), fps * duration, fps * 1000, 10}};
    EXPECT_TRUE(builder.Add(videos, text(rng) + 10, {}, {}, {video, {}}).ok());
    cost::AudioItem audio[] = {{seconds(rng) * 16000, 16000, 10}};
    EXPECT_TRUE(builder.Add(speech, text(rng) + 10, {}, {}, {{}, audio}).ok());
    EXPECT_TRUE(builder.Add(docs, doc(rng), {}).ok());
  }
  auto table = std::move(builder).Finish();
  auto model = cost::CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  EXPECT_TRUE(table.ok() && model.ok());
  auto costs = cost::CostSamples(*table, *model);
  EXPECT_TRUE(costs.ok()) << costs.status().ToString();
  return OmniCorpus{std::move(*table), std::move(*model), std::move(*costs)};
}

PlannerConfig OmniConfig() {
  PlannerConfig config;
  config.layout.seq_len = 8192;
  config.layout.dp = 8;
  config.layout.ep = 8;
  config.layout.ga = 4;
  config.layout.cp = 2;
  config.seed = 3;
  return config;
}

TEST(OmniPlanTest, VideosAndAudioArePlacedCostedAndAssignedLikeImages) {
  OmniCorpus c = MakeOmniCorpus(1);
  auto planner = Planner::Create(c.table, c.model, OmniConfig());
  ASSERT_TRUE(planner.ok()) << planner.status().ToString();
  bool straddles = false;
  for (int step = 0; step < 3; ++step) {
    auto plan = planner->PlanStep();
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_TRUE(plan->Validate().ok()) << plan->Validate().ToString();
    ASSERT_FALSE(plan->videos.empty());
    ASSERT_FALSE(plan->audios.empty());
    ASSERT_EQ(plan->cp.size(), plan->packs.size());
    for (size_t p = 0; p < plan->packs.size(); ++p) {
      const PlannedPack& pack = plan->packs[p];
      size_t images = 0, videos = 0, audios = 0;
      double vision_flops = 0, audio_flops = 0;
      for (const PlannedSequence& s : plan->Sequences(pack)) {
        const uint64_t row = c.table.source_begin[s.source] + s.index;
        // The sample's tokens: its text, every image, video and audio clip.
        EXPECT_EQ(s.tokens, s.text_tokens + c.costs.MediaTokens(row));
        images += plan->Images(s).size();
        videos += plan->Videos(s).size();
        audios += plan->Audios(s).size();
        for (const PlannedVideo& v : plan->Videos(s)) {
          vision_flops += v.vision_flops;
          EXPECT_EQ(v.llm_tokens, c.costs.video_tokens[row]);
          EXPECT_EQ(v.token_start, std::min(10u, s.text_tokens));
          EXPECT_EQ(v.frames % 2, 0u);
        }
        for (const PlannedImage& im : plan->Images(s)) vision_flops += im.vision_flops;
        for (const PlannedAudio& a : plan->Audios(s)) {
          audio_flops += a.audio_flops;
          EXPECT_EQ(a.llm_tokens, c.costs.audio_tokens[row]);
        }
      }
      // The pack's encoder seconds are its items' FLOPs at the encoder MFU, per encoder.
      EXPECT_NEAR(pack.vision_seconds, c.model.VisionSeconds(vision_flops),
                  1e-9 * (1 + pack.vision_seconds));
      EXPECT_NEAR(pack.audio_seconds, c.model.VisionSeconds(audio_flops),
                  1e-9 * (1 + pack.audio_seconds));
      // Vision DP assigns images then videos; audio clips get their own assignment.
      const PackCp& cp = plan->cp[p];
      ASSERT_EQ(cp.vision.encoders.size(), images + videos);
      ASSERT_EQ(cp.audio.encoders.size(), audios);
      // A video straddles CP ranks when both ranks' shards consume rows of it.
      for (size_t k = images; k < images + videos; ++k) {
        int consumers = 0;
        for (const auto& rows : cp.vision.consumed) {
          consumers += std::any_of(rows.begin(), rows.end(),
                                   [&](const cp::RowSegment& r) { return r.image == k; });
        }
        EXPECT_GE(consumers, 1);
        straddles |= consumers == 2;
      }
      double assigned = 0;
      for (double cost : cp.vision.rank_cost) assigned += cost;
      EXPECT_NEAR(assigned, pack.vision_seconds, 1e-9 * (1 + pack.vision_seconds));
      if (audios > 0) {
        double audio_assigned = 0;
        for (double cost : cp.audio.rank_cost) audio_assigned += cost;
        EXPECT_NEAR(audio_assigned, pack.audio_seconds, 1e-9 * (1 + pack.audio_seconds));
      }
    }
  }
  EXPECT_TRUE(straddles);
}

TEST(OmniPlanTest, MmptIsFasterThanVanillaAndNearItsLowerBound) {
  OmniCorpus c = MakeOmniCorpus(2);
  PlannerConfig config = OmniConfig();
  auto mmpt = Planner::Create(c.table, c.model, config);
  auto vanilla = VanillaPlanner::Create(c.table, c.model, config);
  ASSERT_TRUE(mmpt.ok() && vanilla.ok());
  for (int step = 0; step < 3; ++step) {
    auto a = mmpt->PlanStep();
    auto b = vanilla->PlanStep();
    ASSERT_TRUE(a.ok() && b.ok());
    // mmpt is faster, and within reach of its own packs' perfect balance.
    const double mine = a->estimate.step_seconds / a->estimate.lower_bound_seconds;
    EXPECT_GE(mine, 1 - 1e-12);
    EXPECT_LT(a->estimate.step_seconds, b->estimate.step_seconds) << "step " << step;
    EXPECT_LT(mine, 1.25) << "step " << step;
  }
}

}  // namespace
}  // namespace mmpt::plan
