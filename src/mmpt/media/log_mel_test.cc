#include "mmpt/media/log_mel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <thread>
#include <vector>

namespace mmpt::media {
namespace {

constexpr uint32_t kRate = 16000;

std::vector<float> Sine(double hz, double amplitude, size_t samples) {
  std::vector<float> pcm(samples);
  for (size_t i = 0; i < samples; ++i) {
    pcm[i] = static_cast<float>(amplitude * std::sin(2.0 * std::numbers::pi * hz * i / kRate));
  }
  return pcm;
}

float At(const LogMelFeatures& f, uint32_t mel, uint32_t frame) {
  return f.input_features[size_t{mel} * f.frames + frame];
}

// The front ends of the models these tests follow, from their preprocessor_config.json and
// processors (presets/audio gives them to the library; AvPresetsTest checks it gives these).
Result<LogMelConfig> Front(std::string_view model) {
  if (model == "whisper") return LogMelConfig{.n_mels = 80};
  if (model == "qwen2-audio") return LogMelConfig{.n_mels = 128};
  if (model == "qwen2.5-omni") {
    return LogMelConfig{.n_mels = 128, .chunk_seconds = 300, .padding = ClipPadding::kWindowMasked};
  }
  if (model == "qwen3-omni") {
    return LogMelConfig{.n_mels = 128,
                        .chunk_seconds = 300,
                        .padding = ClipPadding::kClip,
                        .tokens = AudioTokenRule::kChunkedConv};
  }
  return Status::NotFound("no front end for '{}' in these tests", model);
}

TEST(LogMelTest, FrontEndsAndWindow) {
  auto whisper = Front("whisper");
  ASSERT_TRUE(whisper.ok());
  EXPECT_EQ(whisper->n_mels, 80u);
  auto qwen = Front("qwen2-audio");
  ASSERT_TRUE(qwen.ok());
  EXPECT_EQ(qwen->n_mels, 128u);
  EXPECT_EQ(qwen->WindowSamples(), 480000u);
  EXPECT_EQ(qwen->Frames(), 3000u);
  auto omni = Front("qwen2.5-omni");
  ASSERT_TRUE(omni.ok());
  EXPECT_EQ(omni->n_mels, 128u);
  EXPECT_EQ(omni->Frames(), 30000u);  // a 300 s window
}

TEST(LogMelTest, AudioTokensFollowConvThenPool) {
  constexpr auto kRule = AudioTokenRule::kConvThenPool;
  EXPECT_EQ(AudioTokens(kRule, 0), 0u);
  EXPECT_EQ(AudioTokens(kRule, 1), 0u);  // (1-1)//2+1 = 1, (1-2)//2+1 = 0 in Python
  EXPECT_EQ(AudioTokens(kRule, 2), 0u);
  EXPECT_EQ(AudioTokens(kRule, 3), 1u);     // 2, then 1
  EXPECT_EQ(AudioTokens(kRule, 100), 25u);  // 1 s: 50, then 25
  EXPECT_EQ(AudioTokens(kRule, 3000), 750u);
}

TEST(LogMelTest, Qwen3OmniCountsChunksOfAHundredFramesAndWholeHops) {
  auto qwen3 = Front("qwen3-omni");
  ASSERT_TRUE(qwen3.ok());
  EXPECT_EQ(qwen3->n_mels, 128u);
  EXPECT_EQ(qwen3->Frames(), 30000u);
  const AudioTokenRule rule = qwen3->tokens;
  EXPECT_EQ(rule, AudioTokenRule::kChunkedConv);
  // By hand from _get_feat_extract_output_lengths: r = n % 100, then (r-1)//2+1 three times.
  EXPECT_EQ(AudioTokens(rule, 0), 0u);
  EXPECT_EQ(AudioTokens(rule, 1), 1u);     // 1, 1, 1
  EXPECT_EQ(AudioTokens(rule, 8), 1u);     // 4, 2, 1
  EXPECT_EQ(AudioTokens(rule, 9), 2u);     // 5, 3, 2
  EXPECT_EQ(AudioTokens(rule, 99), 13u);   // 50, 25, 13
  EXPECT_EQ(AudioTokens(rule, 100), 13u);  // one chunk, nothing left
  EXPECT_EQ(AudioTokens(rule, 101), 14u);
  EXPECT_EQ(AudioTokens(rule, 250), 33u);  // 26 + (25, 13, 7)
  EXPECT_EQ(AudioTokens(rule, 30000), 3900u);
  // Padded to its own length, a clip counts whole hops only; padded to the window, a frame
  // counts when it starts inside the clip.
  EXPECT_EQ(ValidFrames(*qwen3, 16159), 100u);
  EXPECT_EQ(ValidFrames(*qwen3, 16160), 101u);
  EXPECT_EQ(ValidFrames(*Front("qwen2.5-omni"), 16159), 101u);
  EXPECT_EQ(ValidFrames(*qwen3, 301 * 16000), 30000u);  // cut at the 300 s window
}

TEST(LogMelTest, FramesOfTokensGiveTheirTokensAndWindowsExactly) {
  for (AudioTokenRule rule : {AudioTokenRule::kConvThenPool, AudioTokenRule::kChunkedConv}) {
    for (uint32_t t = 0; t <= 3900; ++t) {
      ASSERT_EQ(AudioTokens(rule, FramesOfTokens(rule, t)), t) << static_cast<int>(rule);
      if (t > 0) {
        ASSERT_LT(FramesOfTokens(rule, t - 1), FramesOfTokens(rule, t));
      }
    }
  }
  // Qwen3-Omni: a chunk's token i starts at its frame 8·i; 104 tokens are an 800-frame window.
  EXPECT_EQ(FramesOfTokens(AudioTokenRule::kChunkedConv, 14), 108u);
  EXPECT_EQ(FramesOfTokens(AudioTokenRule::kChunkedConv, 104), 800u);
  EXPECT_EQ(FramesOfTokens(AudioTokenRule::kConvThenPool, 50), 200u);  // Qwen2.5-Omni's 2 s
}

TEST(LogMelTest, FilterBankSlaneyValue) {
  auto extractor = LogMelExtractor::Create(*Front("whisper"));
  ASSERT_TRUE(extractor.ok());
  std::span<const double> filters = (*extractor)->MelFilters();
  ASSERT_EQ(filters.size(), 80u * 201u);
  // 8 kHz is 15 + 27·ln(8000/1000)/ln(6.4) = 45.2456 mel; 82 edges 0.558588 mel = 37.2392 Hz
  // apart (linear region). Band 0 spans 0..74.478 Hz, so bin 1 (40 Hz) is on its falling
  // side: (74.4785 − 40) / 37.2392 = 0.925866, times Slaney's 2 / 74.4785.
  EXPECT_NEAR(filters[1], 0.925866 * 2.0 / 74.4785, 1e-6);
  EXPECT_EQ(filters[0], 0.0);  // 0 Hz is band 0's lower edge
  EXPECT_EQ(filters[2], 0.0);  // 80 Hz is past its upper edge
  for (double weight : filters) EXPECT_GE(weight, 0.0);
}

TEST(LogMelTest, SineAtBinMatchesClosedForm) {
  // A sine at exactly bin k (k · 40 Hz) under a periodic Hann window of N samples gives
  // |X_k| = A·N/4 and |X_k±1| = A·N/8, and nothing elsewhere: each band's power is known.
  const uint32_t k = 25;  // 1 kHz
  const double amplitude = 0.5, n = 400;
  const LogMelConfig config = *Front("qwen2-audio");
  auto extractor = LogMelExtractor::Create(config);
  ASSERT_TRUE(extractor.ok());
  auto features = (*extractor)->Extract(Sine(k * 40.0, amplitude, kRate));
  ASSERT_TRUE(features.ok()) << features.status().ToString();
  std::span<const double> filters = (*extractor)->MelFilters();
  const uint32_t bins = 201;
  std::vector<double> log_power(config.n_mels);
  for (uint32_t m = 0; m < config.n_mels; ++m) {
    const double* w = &filters[size_t{m} * bins];
    const double power = w[k] * std::pow(amplitude * n / 4, 2) +
                         (w[k - 1] + w[k + 1]) * std::pow(amplitude * n / 8, 2);
    log_power[m] = std::log10(std::max(power, 1e-10));
  }
  const double max_log = *std::max_element(log_power.begin(), log_power.end());
  for (uint32_t m = 0; m < config.n_mels; ++m) {
    const double expected = (std::max(log_power[m], max_log - 8.0) + 4.0) / 4.0;
    EXPECT_NEAR(At(*features, m, 50), expected, 1e-4) << "mel " << m;  // frame 50: 0.5 s
  }
}

TEST(LogMelTest, SilenceSitsAtTheFloorAndMaskCountsFrames) {
  auto features = LogMel(std::vector<float>(kRate, 0.0f), *Front("whisper"));
  ASSERT_TRUE(features.ok());
  EXPECT_EQ(features->n_mels, 80u);
  EXPECT_EQ(features->frames, 3000u);
  ASSERT_EQ(features->input_features.size(), 80u * 3000u);
  // log10(1e-10) = -10 everywhere, (−10 + 4) / 4 = −1.5.
  for (float value : features->input_features) ASSERT_EQ(value, -1.5f);
  EXPECT_EQ(features->valid_frames, 100u);
  EXPECT_EQ(features->tokens, 25u);
  EXPECT_EQ(features->attention_mask[99], 1);
  EXPECT_EQ(features->attention_mask[100], 0);
}

TEST(LogMelTest, PartialHopCountsAsAFrame) {
  // 161 samples start frames 0 and 1 (sample 160 is audio).
  auto features = LogMel(Sine(440, 0.1, 161), *Front("whisper"));
  ASSERT_TRUE(features.ok());
  EXPECT_EQ(features->valid_frames, 2u);
  EXPECT_EQ(features->tokens, 0u);
}

// One rule for the frames that hold audio: the features' mask and ValidFrames (what the plan
// counts through cost::CostAudio) agree at every length around the hop and the window.
TEST(LogMelTest, TheMaskSumIsValidFrames) {
  const LogMelConfig config = *Front("qwen2-audio");
  for (size_t samples :
       {1ul, 159ul, 160ul, 161ul, 16000ul, 30ul * kRate - 1, 30ul * kRate, 31ul * kRate}) {
    auto features = LogMel(Sine(440, 0.1, samples), config);
    ASSERT_TRUE(features.ok());
    EXPECT_EQ(features->valid_frames, ValidFrames(config, samples)) << samples;
  }
}

TEST(LogMelTest, LongAudioIsCutToTheWindow) {
  const LogMelConfig config = *Front("qwen2-audio");
  std::vector<float> pcm = Sine(300, 0.3, 31 * kRate);
  for (size_t i = 30 * kRate; i < pcm.size(); ++i) pcm[i] = 0.9f;  // beyond 30 s: ignored
  auto longer = LogMel(pcm, config);
  pcm.resize(30 * kRate);
  auto cut = LogMel(pcm, config);
  ASSERT_TRUE(longer.ok() && cut.ok());
  EXPECT_EQ(longer->input_features, cut->input_features);
  EXPECT_EQ(longer->valid_frames, 3000u);
  EXPECT_EQ(longer->tokens, 750u);
}

TEST(LogMelTest, SameResultOnManyThreads) {
  const LogMelConfig config = *Front("qwen2.5-omni");
  std::vector<std::vector<float>> clips;
  std::vector<LogMelFeatures> serial;
  for (int i = 0; i < 4; ++i) {
    clips.push_back(Sine(200.0 + 300 * i, 0.2, (i + 1) * 7000));
    serial.push_back(*LogMel(clips.back(), config));
  }
  std::vector<LogMelFeatures> parallel(clips.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < clips.size(); ++i) {
    threads.emplace_back([&, i] { parallel[i] = *LogMel(clips[i], config); });
  }
  for (auto& thread : threads) thread.join();
  for (size_t i = 0; i < clips.size(); ++i) {
    EXPECT_EQ(parallel[i].input_features, serial[i].input_features) << "clip " << i;
  }
}

TEST(LogMelTest, ExtractIntoWritesTheSameIntoCallerMemory) {
  auto extractor = LogMelExtractor::Create(*Front("whisper"));
  ASSERT_TRUE(extractor.ok());
  const std::vector<float> pcm = Sine(700, 0.3, 3 * kRate);
  auto features = (*extractor)->Extract(pcm);
  ASSERT_TRUE(features.ok());
  std::vector<float> batch(80 * 3000, 7.0f);
  std::vector<int32_t> mask(3000, 7);
  auto valid = (*extractor)->ExtractInto(pcm, batch, mask);
  ASSERT_TRUE(valid.ok());
  EXPECT_EQ(*valid, 300u);
  EXPECT_EQ(batch, features->input_features);
  EXPECT_EQ(mask, features->attention_mask);
  std::vector<float> short_batch(80 * 2999);
  EXPECT_EQ((*extractor)->ExtractInto(pcm, short_batch, mask).status().code(),
            StatusCode::kInvalidArgument);
}

// Quiet noise with a loud click on the clip's last sample: the frame centred nearest the click
// starts past the clip (not a valid frame), holds the window's maximum and so sets the floor.
std::vector<float> QuietWithAClickAtTheEnd(size_t samples) {
  std::vector<float> pcm(samples);
  uint32_t state = 12345;
  for (float& x : pcm) {
    state = state * 1664525u + 1013904223u;
    x = 1e-5f * (static_cast<float>(state >> 8) / (1u << 24) - 0.5f);
  }
  pcm.back() = 0.9f;
  return pcm;
}

TEST(LogMelTest, KeptFramesEqualTheWholeWindow) {
  for (const char* preset : {"qwen2.5-omni", "whisper"}) {
    auto extractor = LogMelExtractor::Create(*Front(preset));
    ASSERT_TRUE(extractor.ok());
    const uint32_t n_mels = (*extractor)->config().n_mels;
    const uint32_t window = (*extractor)->config().Frames();
    // A click 150 samples past a hop (the nearest frame centre is the next hop, past the
    // clip), a partial hop, a whole number of hops, and (Whisper) the whole window and more.
    std::vector<size_t> lengths = {kRate + 151, 2 * kRate + 1, 3 * kRate};
    if (window == 3000) lengths.push_back(30 * kRate + 500);
    for (size_t length : lengths) {
      const std::vector<float> pcm = QuietWithAClickAtTheEnd(length);
      auto whole = (*extractor)->Extract(pcm);
      ASSERT_TRUE(whole.ok());
      const uint32_t valid = whole->valid_frames;
      auto loudest = std::max_element(whole->input_features.begin(), whole->input_features.end());
      const auto loudest_frame =
          static_cast<uint32_t>((loudest - whole->input_features.begin()) % window);
      if (length == kRate + 151) {
        EXPECT_EQ(loudest_frame, valid) << "the maximum must lie past the kept frames";
      }
      for (uint32_t kept : {valid, std::min(valid + 7, window), std::max(valid / 2, 1u)}) {
        SCOPED_TRACE(std::string(preset) + ", " + std::to_string(length) + " samples, " +
                     std::to_string(kept) + " frames kept");
        std::vector<float> features(size_t{n_mels} * kept, 7.0f);
        std::vector<int32_t> mask(kept, 7);
        auto got = (*extractor)->ExtractInto(pcm, features, mask);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(*got, valid);
        for (uint32_t m = 0; m < n_mels; ++m) {
          const float* row = whole->input_features.data() + size_t{m} * window;
          ASSERT_TRUE(std::equal(row, row + kept, features.begin() + size_t{m} * kept))
              << "mel bin " << m;
        }
        EXPECT_TRUE(std::equal(mask.begin(), mask.end(), whole->attention_mask.begin()));
      }
    }
  }
}

TEST(LogMelTest, ForConfigSharesOneExtractor) {
  const LogMelConfig config = *Front("whisper");
  auto a = LogMelExtractor::ForConfig(config);
  auto b = LogMelExtractor::ForConfig(config);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
}

TEST(LogMelTest, RejectsBadInputAndConfig) {
  const LogMelConfig config = *Front("whisper");
  EXPECT_EQ(LogMel({}, config).status().code(), StatusCode::kInvalidArgument);
  std::vector<float> pcm(1000, 0.1f);
  pcm[700] = std::nanf("");
  auto nan = LogMel(pcm, config);
  EXPECT_EQ(nan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nan.status().message().find("sample 700"), std::string::npos);

  LogMelConfig zero_hop = config;
  zero_hop.hop = 0;
  EXPECT_EQ(LogMelExtractor::Create(zero_hop).status().code(), StatusCode::kInvalidArgument);
  LogMelConfig ragged = config;
  ragged.hop = 7;  // 480,000 is not a multiple of 7
  EXPECT_EQ(LogMelExtractor::Create(ragged).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmpt::media
