#include "mmpt/media/audio_in_video.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace mmpt::media {
namespace {

using Runs = std::vector<AudioInVideoRun>;

AudioInVideoRule Rule(std::string_view model, float scale) {
  Result<AudioInVideoRule> rule = AudioInVideoRuleOf(model, scale);
  EXPECT_TRUE(rule.ok()) << rule.status().ToString();
  return *rule;
}

struct Positions {
  std::vector<int32_t> t, h, w;
  int32_t next = 0;
};

Positions Place(const AudioInVideoRule& rule, const AudioInVideo& item, int32_t start) {
  Positions p;
  p.t.resize(item.block_tokens());
  p.h.resize(item.block_tokens());
  p.w.resize(item.block_tokens());
  p.next = AudioInVideoPositions(rule, item, AudioInVideoRuns(rule, item), start, p.t, p.h, p.w);
  return p;
}

TEST(AudioInVideoTest, Qwen25OmniTwoSecondChunks) {
  // 3 grid steps of 1x2 tokens, 1 s each (2 fps): keys 0, 25, 50; 3 s of audio, 75 tokens.
  const AudioInVideoRule rule = Rule("qwen2.5-omni", 25);
  const AudioInVideo item{3, 1, 2, 1.0f, 75};
  EXPECT_EQ(AudioInVideoRuns(rule, item),
            (Runs{{true, 0, 4}, {false, 0, 50}, {true, 4, 2}, {false, 50, 25}}));
  const Positions p = Place(rule, item, 10);
  EXPECT_EQ(p.t[0], 10);
  EXPECT_EQ(p.t[1], 10);  // the start pair shares its position
  EXPECT_EQ(p.t[2], 11);  // grid step 0 at base 11
  EXPECT_EQ(p.w[3], 12);
  EXPECT_EQ(p.t[4], 36);  // step 1: key 25
  EXPECT_EQ(p.h[4], 11);
  EXPECT_EQ(p.t[6], 11);   // audio token 0
  EXPECT_EQ(p.w[55], 60);  // audio token 49
  EXPECT_EQ(p.t[56], 61);  // step 2: key 50
  EXPECT_EQ(p.t[58], 61);  // audio token 50
  EXPECT_EQ(p.t[82], 85);  // audio token 74
  EXPECT_EQ(p.t[83], 86);  // the end pair: one past the last run
  EXPECT_EQ(p.h[84], 86);
  EXPECT_EQ(p.next, 87);
}

TEST(AudioInVideoTest, Qwen25OmniEndsAfterTheLastRunNotTheLargest) {
  // The video outlasts its sound: the last run is grid step 2 (key 50, rows and columns < 2).
  const AudioInVideoRule rule = Rule("qwen2.5-omni", 25);
  const AudioInVideo item{3, 2, 2, 1.0f, 40};
  EXPECT_EQ(AudioInVideoRuns(rule, item), (Runs{{true, 0, 8}, {false, 0, 40}, {true, 8, 4}}));
  EXPECT_EQ(Place(rule, item, 0).t.back(), 52);
  // 80 merged rows reach base + 79, but the last run (audio 50-59) ends at base + 59.
  const AudioInVideo tall{3, 80, 1, 1.0f, 60};
  EXPECT_EQ(AudioInVideoRuns(rule, tall),
            (Runs{{true, 0, 160}, {false, 0, 50}, {true, 160, 80}, {false, 50, 10}}));
  const Positions p = Place(rule, tall, 0);
  EXPECT_EQ(*std::max_element(p.h.begin(), p.h.end()), 80);
  EXPECT_EQ(p.t.back(), 61);
  EXPECT_EQ(p.next, 62);
}

TEST(AudioInVideoTest, Qwen25OmniStepLongerThanAChunkSplitsAsTheReference) {
  // 4 s per grid step (0.5 fps): step 1's key 100 passes two chunk thresholds; the reference
  // moves on one chunk per token, so its first token is a chunk of its own.
  const AudioInVideoRule rule = Rule("qwen2.5-omni", 25);
  const AudioInVideo item{2, 1, 3, 4.0f, 120};
  EXPECT_EQ(AudioInVideoRuns(rule, item), (Runs{{true, 0, 3},
                                                {false, 0, 50},
                                                {true, 3, 1},
                                                {false, 50, 50},
                                                {true, 4, 2},
                                                {false, 100, 20}}));
}

TEST(AudioInVideoTest, Qwen3OmniMergedByTimeVideoFirstOnTies) {
  // Keys 0, 13, 26 (2 fps at 13 a second); 30 audio tokens: audio 13 ties with step 1's key
  // 13 and goes after it.
  const AudioInVideoRule rule = Rule("qwen3-omni", 13);
  const AudioInVideo item{3, 1, 2, 1.0f, 30};
  EXPECT_EQ(AudioInVideoRuns(rule, item), (Runs{{true, 0, 2},
                                                {false, 0, 13},
                                                {true, 2, 2},
                                                {false, 13, 13},
                                                {true, 4, 2},
                                                {false, 26, 4}}));
  const Positions p = Place(rule, item, 10);
  EXPECT_EQ(p.t[0], 10);
  EXPECT_EQ(p.t[1], 11);  // the start pair follows one another
  EXPECT_EQ(p.t[2], 12);
  EXPECT_EQ(p.w[3], 13);
  EXPECT_EQ(p.t[4], 12);   // audio token 0
  EXPECT_EQ(p.t[17], 25);  // step 1 at key 13
  EXPECT_EQ(p.t[37], 41);  // audio token 29
  EXPECT_EQ(p.t[38], 42);
  EXPECT_EQ(p.t[39], 43);
  EXPECT_EQ(p.next, 44);
}

TEST(AudioInVideoTest, EveryTokenOnceInOrder) {
  for (const char* model : {"qwen2.5-omni", "qwen3-omni"}) {
    const AudioInVideoRule rule = Rule(model, 25);
    for (const AudioInVideo& item :
         {AudioInVideo{5, 2, 3, 1.0f, 131}, AudioInVideo{4, 1, 1, 0.8f, 7},
          AudioInVideo{1, 2, 2, 3.f, 0}, AudioInVideo{6, 3, 2, 2.5f, 400}}) {
      uint32_t video = 0, audio = 0;
      for (const AudioInVideoRun& run : AudioInVideoRuns(rule, item)) {
        ASSERT_GT(run.count, 0u);
        ASSERT_EQ(run.first, run.video ? video : audio) << model;
        (run.video ? video : audio) += run.count;
      }
      EXPECT_EQ(video, item.video_tokens()) << model;
      EXPECT_EQ(audio, item.audio_tokens) << model;
    }
  }
}

TEST(AudioInVideoTest, UnknownModelAndScaleAreNamed) {
  Result<AudioInVideoRule> rule = AudioInVideoRuleOf("qwen2-vl", 2);
  ASSERT_FALSE(rule.ok());
  EXPECT_NE(rule.status().message().find("qwen2-vl"), std::string::npos);
  EXPECT_FALSE(AudioInVideoRuleOf("qwen3-omni", 0).ok());
}

}  // namespace
}  // namespace mmpt::media
