#include <gtest/gtest.h>

#include <map>

#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/presets.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/media/log_mel.h"

namespace mmpt::cost {
namespace {

TEST(AvPresetsTest, EveryAudioPresetLoadsWithItsLogMelSettings) {
  using media::AudioTokenRule;
  using media::ClipPadding;
  using media::LogMelConfig;
  // Each model's front end, from its preprocessor_config.json and processor.
  const std::map<std::string, LogMelConfig> expected = {
      {"qwen2-audio", {.n_mels = 128}},
      {"qwen2.5-omni",
       {.n_mels = 128, .chunk_seconds = 300, .padding = ClipPadding::kWindowMasked}},
      {"qwen3-omni",
       {.n_mels = 128,
        .chunk_seconds = 300,
        .padding = ClipPadding::kClip,
        .tokens = AudioTokenRule::kChunkedConv}},
      {"whisper-large-v2", {.n_mels = 80}},
      {"whisper-large-v3", {.n_mels = 128}},
  };
  auto names = ListPresets("audio");
  ASSERT_EQ(names.size(), expected.size());
  for (const std::string& name : names) {
    auto preset = LoadAudioPreset(name);
    ASSERT_TRUE(preset.ok()) << name << ": " << preset.status().ToString();
    ASSERT_TRUE(expected.contains(name)) << name;
    EXPECT_EQ(preset->log_mel, expected.at(name)) << name;
  }
  EXPECT_EQ(LoadAudioPreset(Defaults::kAudio)->log_mel.chunk_seconds, 300u);
  auto unknown = ParseAudioPreset(
      R"({"name": "x", "features": {"padding": "both"}, "encoder": {"hidden": 8, "layers": 1,
          "heads": 1, "mlp_hidden": 8}})",
      "x.json");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().ToString().find("x.json: features"), std::string::npos)
      << unknown.status().ToString();
  EXPECT_NE(unknown.status().ToString().find("'both'"), std::string::npos);
  auto no_features =
      ParseAudioPreset(R"({"name": "x", "features": "whisper", "encoder": {}})", "x.json");
  ASSERT_FALSE(no_features.ok());
  EXPECT_NE(no_features.status().ToString().find("'features'"), std::string::npos)
      << no_features.status().ToString();
  auto missing = ParseAudioPreset(R"({"name": "x", "features": {}, "encoder": {}})", "x.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().ToString().find("encoder.hidden"), std::string::npos);
}

TEST(VideoCostTest, QwenVideoTokensFollowSampleVideoAndTheTemporalMerge) {
  auto vision = LoadVisionPreset("qwen2.5-vl");
  ASSERT_TRUE(vision.ok());
  // 135 frames at 30 fps (4.5 s): 2 fps gives 9 frames, floored to the temporal patch: 8.
  // 640×360 is under the per-frame budget: smart_resize to 644×364 (23 × 13 merged patches).
  auto video = CostVideo(*vision, 640, 360, 135, 30000, 3584);
  ASSERT_TRUE(video.ok()) << video.status().ToString();
  EXPECT_EQ(video->sampled_frames, 8u);
  EXPECT_EQ(video->grid_t, 4u);
  EXPECT_EQ(video->resized_width, 644u);
  EXPECT_EQ(video->resized_height, 364u);
  EXPECT_EQ(video->llm_tokens, 4u * 23 * 13);  // (frames / 2) · (h / 28) · (w / 28)
  EXPECT_EQ(video->patches, 4 * video->llm_tokens);
  // Encoder FLOPs: grid_t passes of a frame-sized image (its patch embedding already covers
  // the temporal patch), so 4 × the image's.
  auto image = CostImage(*vision, 360, 640, 3584);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->llm_tokens, 23u * 13);
  EXPECT_DOUBLE_EQ(video->train_flops, 4 * image->train_flops);
  // 9 s: 18 frames (already even), 9 grid steps: tokens and FLOPs grow with the grid.
  auto longer = CostVideo(*vision, 640, 360, 270, 30000, 3584);
  ASSERT_TRUE(longer.ok());
  EXPECT_EQ(longer->grid_t, 9u);
  EXPECT_EQ(longer->llm_tokens, 9u * 23 * 13);
  EXPECT_DOUBLE_EQ(longer->train_flops, 9 * image->train_flops);
  // One frame cannot fill a temporal patch; a tiled encoder has no video rule.
  auto one = CostVideo(*vision, 640, 360, 1, 30000, 3584);
  EXPECT_EQ(one.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(one.status().ToString().find("640x360, 1 frames"), std::string::npos)
      << one.status().ToString();
  auto tiles = LoadVisionPreset("internvit-300m-448");
  ASSERT_TRUE(tiles.ok());
  EXPECT_FALSE(CostVideo(*tiles, 640, 360, 135, 30000, 3584).ok());
}

TEST(VideoCostTest, Qwen3VideoBudgetsScaleWithItsFactor) {
  // qwen-vl-utils derives every video budget from its image factor (32 for Qwen3-VL): a frame
  // at least 128 · 32² pixels. 320×180, 135 frames at 30 fps: 8 frames, each scaled up from
  // 180×320 by √(131072 / 57600) to ⌈8.49⌉ × ⌈15.08⌉ = 9 × 16 merged patches (Python's
  // smart_resize; Qwen2.5-VL's 28-pixel budgets would give 8 × 14).
  auto vision = LoadVisionPreset("qwen3-vl-utils");
  ASSERT_TRUE(vision.ok());
  auto small = CostVideo(*vision, 320, 180, 135, 30000, 4096);
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(small->sampled_frames, 8u);
  EXPECT_EQ(small->resized_height, 288u);
  EXPECT_EQ(small->resized_width, 512u);
  EXPECT_EQ(small->llm_tokens, 4u * 9 * 16);
  // 640×360 is within the budgets: rounded to 352×640.
  auto video = CostVideo(*vision, 640, 360, 135, 30000, 4096);
  ASSERT_TRUE(video.ok());
  EXPECT_EQ(video->resized_height, 352u);
  EXPECT_EQ(video->resized_width, 640u);
}

TEST(VideoCostTest, Qwen3ProcessorSamplesOneBudgetOverAllFramesAndCostsEachGroup) {
  // Hugging Face's Qwen3VLVideoProcessor: 135 frames at 30 fps → int(4.5 · 2) = 9 frames (not
  // made even); its smart_resize rounds 180×320 to 192×320 (t_bar = round(9 / 2) · 2 = 8 frames
  // of it fit 4096…25165824); the 9th frame repeats: 5 groups of 12 × 20 patches, 60 tokens.
  auto vision = LoadVisionPreset("qwen3-vl");
  ASSERT_TRUE(vision.ok());
  auto whole = CostVideo(*vision, 320, 180, 135, 30000, 4096);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->sampled_frames, 10u);
  EXPECT_EQ(whole->resized_height, 192u);
  EXPECT_EQ(whole->resized_width, 320u);
  EXPECT_EQ(whole->grid_t, 5u);
  EXPECT_EQ(whole->llm_tokens, 5u * 60);
  // Under the timestamped template each group is an item: two frames, one grid step.
  auto group = CostVideo(*vision, 320, 180, 135, 30000, 4096, /*groups=*/5);
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  EXPECT_EQ(group->sampled_frames, 2u);
  EXPECT_EQ(group->grid_t, 1u);
  EXPECT_EQ(group->llm_tokens, 60u);
  EXPECT_DOUBLE_EQ(group->train_flops * 5, whole->train_flops);
  // A dataset whose groups another rule counted is refused, naming the counts.
  auto other = CostVideo(*vision, 320, 180, 135, 30000, 4096, /*groups=*/4);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("5 temporal groups where the dataset has 4"),
            std::string::npos)
      << other.status().ToString();
}

TEST(AudioCostTest, TokensFollowThePoolingAndFlopsTheEncodersWindow) {
  auto qwen2 = LoadAudioPreset("qwen2-audio");
  auto omni = LoadAudioPreset("qwen2.5-omni");
  ASSERT_TRUE(qwen2.ok() && omni.ok());
  // 10 s: 1000 mel frames → 500 after the stride-2 convolution → 250 tokens after pooling.
  auto ten = CostAudio(*qwen2, 160000, 4096);
  ASSERT_TRUE(ten.ok());
  EXPECT_EQ(ten->valid_frames, 1000u);
  EXPECT_EQ(ten->llm_tokens, 250u);
  EXPECT_EQ(ten->llm_tokens, media::AudioTokens(media::AudioTokenRule::kConvThenPool, 1000));
  EXPECT_EQ(ten->encoder_frames, 1500u);  // Qwen2-Audio runs over the padded 30 s window
  // Qwen2-Audio cuts at its 30 s window; its cost does not depend on the clip's length.
  auto minute = CostAudio(*qwen2, 960000, 4096);
  ASSERT_TRUE(minute.ok());
  EXPECT_EQ(minute->llm_tokens, 750u);
  EXPECT_DOUBLE_EQ(minute->train_flops, ten->train_flops);
  // Qwen2.5-Omni runs over the clip only: 20 s costs about twice 10 s (windowed attention).
  auto omni_ten = CostAudio(*omni, 160000, 3584), omni_twenty = CostAudio(*omni, 320000, 3584);
  ASSERT_TRUE(omni_ten.ok() && omni_twenty.ok());
  EXPECT_EQ(omni_ten->llm_tokens, 250u);
  EXPECT_EQ(omni_ten->encoder_frames, 500u);
  EXPECT_NEAR(omni_twenty->train_flops / omni_ten->train_flops, 2.0, 1e-3);
  EXPECT_LT(omni_ten->train_flops, ten->train_flops);
  // A 15 ms clip (240 samples): 2 valid frames, too few to survive the pooling.
  EXPECT_EQ(CostAudio(*qwen2, 240, 4096)->llm_tokens, 0u);
  EXPECT_EQ(CostAudio(*qwen2, 0, 4096).status().code(), StatusCode::kInvalidArgument);
}

TEST(AudioCostTest, Qwen3OmniChunksItsFramesAndAttendsWithinWindows) {
  auto qwen3 = LoadAudioPreset("qwen3-omni");
  ASSERT_TRUE(qwen3.ok()) << qwen3.status().ToString();
  EXPECT_EQ(qwen3->conv_channels, 480u);
  // 10 s: 1000 mel frames, ten chunks of 100 → 13 tokens each, which the transformer sees.
  auto ten = CostAudio(*qwen3, 160000, 2048), twenty = CostAudio(*qwen3, 320000, 2048);
  ASSERT_TRUE(ten.ok() && twenty.ok());
  EXPECT_EQ(ten->valid_frames, 1000u);
  EXPECT_EQ(ten->llm_tokens, 130u);
  EXPECT_EQ(ten->encoder_frames, 130u);
  // Attention within windows of 800 frames (104 tokens): cost grows linearly with the clip.
  EXPECT_NEAR(twenty->train_flops / ten->train_flops, 2.0, 0.02);
  // Fewer positions than Qwen2.5-Omni's 500 for the same clip, and cheaper.
  auto omni = CostAudio(*LoadAudioPreset("qwen2.5-omni"), 160000, 2048);
  EXPECT_LT(ten->train_flops, omni->train_flops);
  // Whole hops only.
  EXPECT_EQ(CostAudio(*qwen3, 16159, 2048)->valid_frames, 100u);
  EXPECT_EQ(CostAudio(*qwen3, 16160, 2048)->valid_frames, 101u);
  // The conv front end belongs to the qwen3-omni features alone.
  AudioConfig mixed = *qwen3;
  mixed.conv_channels = 0;
  EXPECT_EQ(mixed.Validate().code(), StatusCode::kInvalidArgument);
}

TEST(AudioCostTest, ASoundTracksPartsCountTheTracksTokensBetweenTheirEnds) {
  // A 9.7 s track cut where its tokens 14, 28 and 104 start (mid-chunk, and the second
  // window): the parts' tokens and frames add up to the whole track's.
  CostModel model =
      CostModel::FromPresets("qwen3-omni", "qwen2.5-7b", "h100", "qwen3-omni").ValueOrDie();
  const uint32_t samples = 155200, hop = 160;
  auto whole = model.Audio({samples, 16000, 0, 0});
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  uint32_t tokens = 0, frames = 0, offset = 0;
  for (uint32_t end : {14u, 28u, 104u, whole->llm_tokens}) {
    const uint32_t stop =
        end == whole->llm_tokens
            ? samples
            : media::FramesOfTokens(media::AudioTokenRule::kChunkedConv, end) * hop;
    AudioItem part{stop - offset, 16000, 0, 0, offset};
    auto cost = model.Audio(part);
    ASSERT_TRUE(cost.ok());
    EXPECT_EQ(tokens + cost->llm_tokens, end);
    tokens += cost->llm_tokens;
    frames += cost->valid_frames;
    offset = stop;
  }
  EXPECT_EQ(tokens, whole->llm_tokens);
  EXPECT_EQ(frames, whole->valid_frames);
}

TEST(AvCostTest, CostSamplesCountsTokensPerModalityAndSecondsPerEncoder) {
  SampleTableBuilder builder;
  uint32_t s = builder.AddSource("omni");
  ImageSize image[] = {{640, 360}};
  VideoItem video[] = {{640, 360, 135, 30000, 5}};
  AudioItem audio[] = {{160000, 44100, 7}};                         // 10 s at 16 kHz
  ASSERT_TRUE(builder.Add(s, 10, image).ok());                      // image only
  ASSERT_TRUE(builder.Add(s, 10, {}, {}, {video, {}}).ok());        // video only
  ASSERT_TRUE(builder.Add(s, 10, image, {}, {video, audio}).ok());  // all three
  VideoItem still[] = {{640, 360, 0, 30000, 0}};
  EXPECT_FALSE(builder.Add(s, 10, {}, {}, {still, {}}).ok());  // no frames
  AudioItem late[] = {{16000, 16000, 11}};
  EXPECT_FALSE(builder.Add(s, 10, {}, {}, {{}, late}).ok());  // past the text
  auto table = std::move(builder).Finish();
  ASSERT_TRUE(table.ok());

  auto model = CostModel::FromPresets("qwen2.5-vl", "qwen2.5-7b", "b200", "qwen2-audio");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto costed = CostSamples(*table, *model);
  ASSERT_TRUE(costed.ok()) << costed.status().ToString();
  EXPECT_EQ(costed->image_tokens, (std::vector<uint32_t>{299, 0, 299}));
  EXPECT_EQ(costed->video_tokens, (std::vector<uint32_t>{0, 1196, 1196}));
  EXPECT_EQ(costed->audio_tokens, (std::vector<uint32_t>{0, 0, 250}));
  EXPECT_EQ(costed->MediaTokens(2), 299u + 1196 + 250);
  // Vision seconds: images and videos; audio seconds: the audio encoder's alone.
  EXPECT_DOUBLE_EQ(costed->vision_seconds[2],
                   costed->vision_seconds[0] + costed->vision_seconds[1]);
  EXPECT_EQ(costed->audio_seconds[0], 0.0);
  EXPECT_DOUBLE_EQ(costed->audio_seconds[2], model->VisionSeconds(costed->audios[0].train_flops));
  EXPECT_GT(costed->audio_seconds[2], 0.0);

  // An image-only table gets no video or audio vectors.
  SampleTableBuilder images;
  ASSERT_TRUE(images.Add(images.AddSource("i"), 10, image).ok());
  auto image_table = std::move(images).Finish();
  auto image_costs = CostSamples(*image_table, *model);
  ASSERT_TRUE(image_costs.ok());
  EXPECT_TRUE(image_costs->video_tokens.empty());
  EXPECT_TRUE(image_costs->audio_seconds.empty());
  EXPECT_EQ(image_costs->MediaTokens(0), 299u);

  // Without an audio encoder, audio is an error naming the sample and clip.
  auto no_audio = CostModel::FromPresets("qwen2.5-vl", "qwen2.5-7b", "b200", "");
  ASSERT_TRUE(no_audio.ok());
  auto refused = CostSamples(*table, *no_audio);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().ToString().find("source 'omni' sample 2 audio 0"), std::string::npos)
      << refused.status().ToString();
}

}  // namespace
}  // namespace mmpt::cost
