#include "mmpt/media/audio.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "mmpt/media/av_test_util.h"

namespace mmpt::media {
namespace {

// What `ffmpeg -i FILE -ac 1 -ar RATE -f f32le` writes for a file made earlier.
std::vector<float> FfmpegPcm(const std::string& name, uint32_t rate) {
  std::string raw = SharedMedia().Make(name + "." + std::to_string(rate) + ".f32",
                                       "-i '" + (SharedMedia().dir() / name).string() +
                                           "' -ac 1 -ar " + std::to_string(rate) + " -f f32le");
  std::vector<float> pcm(raw.size() / sizeof(float));
  std::memcpy(pcm.data(), raw.data(), pcm.size() * sizeof(float));
  return pcm;
}

struct Case {
  std::string name, args;
};

TEST(AudioDecodeTest, MatchesTheFfmpegCommand) {
  for (const Case& c : std::vector<Case>{
           {"a.wav", Tone(16000, 1, 1.5)},
           {"s.wav", Tone(44100, 2, 1.5)},
           {"a.flac", Tone(48000, 2, 1.5)},
           {"a.mp3", Tone(44100, 2, 1.5) + " -c:a libmp3lame"},
           {"a.ogg", Tone(22050, 1, 1.5) + " -c:a libvorbis"},
           {"six.flac", "-f lavfi -i sine=frequency=300:sample_rate=32000:duration=1 -ac 6"}}) {
    SCOPED_TRACE(c.name);
    std::string bytes = SharedMedia().Make(c.name, c.args);
    for (uint32_t rate : {16000u, 8000u}) {
      auto decoded = DecodeAudio(AsBytes(bytes), rate);
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      EXPECT_EQ(decoded->sample_rate, rate);
      std::vector<float> expected = FfmpegPcm(c.name, rate);
      ASSERT_FALSE(expected.empty());
      EXPECT_EQ(decoded->samples.size(), expected.size()) << rate << " Hz";
      size_t n = std::min(decoded->samples.size(), expected.size());
      float worst = 0, peak = 0;
      for (size_t i = 0; i < n; ++i) {
        worst = std::max(worst, std::fabs(decoded->samples[i] - expected[i]));
        peak = std::max(peak, std::fabs(expected[i]));
      }
      EXPECT_LT(worst, 1e-5f) << rate << " Hz";
      EXPECT_GT(peak, 0.05f) << "the tone must be audible, or the comparison proves nothing";
    }
  }
}

TEST(AudioDecodeTest, AudioTrackOfAVideo) {
  auto decoded = DecodeAudio(AsBytes(BaseMp4()));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->source.codec, "aac");
  EXPECT_EQ(decoded->source.channels, 2u);
  EXPECT_NEAR(static_cast<double>(decoded->samples.size()) / 16000, 2.0, 0.05);
  std::vector<float> expected = FfmpegPcm(kBaseMp4, 16000);
  ASSERT_EQ(decoded->samples.size(), expected.size());
  for (size_t i = 0; i < expected.size(); i += 97) {
    ASSERT_NEAR(decoded->samples[i], expected[i], 1e-5f) << "sample " << i;
  }
}

TEST(AudioDecodeTest, VideoWithoutAudioIsInvalidArgument) {
  std::string webm =
      SharedMedia().Make("silent.webm", TestPattern(64, 48, 10, 1) + " -c:v libvpx -an");
  auto decoded = DecodeAudio(AsBytes(webm));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(decoded.status().message().find("no audio stream"), std::string::npos)
      << decoded.status().ToString();
}

TEST(AudioDecodeTest, ZeroLengthAudioIsCorrupt) {
  std::string wav = SharedMedia().Make("z.wav", "-f lavfi -i anullsrc=r=16000:cl=mono -t 0");
  auto decoded = DecodeAudio(AsBytes(wav));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorrupt) << decoded.status().ToString();
  EXPECT_NE(decoded.status().message().find("zero length"), std::string::npos)
      << decoded.status().ToString();
}

TEST(AudioDecodeTest, ZeroChannelsIsAnError) {
  std::string wav = SharedMedia().Make("a.wav", Tone(16000, 1, 1.5));
  ASSERT_EQ(wav.compare(12, 4, "fmt "), 0);
  wav[22] = wav[23] = 0;  // WAVE fmt chunk: channel count
  auto decoded = DecodeAudio(AsBytes(wav));
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("0 channels"), std::string::npos)
      << decoded.status().ToString();
}

TEST(AudioDecodeTest, UnknownCodecIsNamed) {
  std::string wav = SharedMedia().Make("a.wav", Tone(16000, 1, 1.5));
  wav[20] = '\x34';  // WAVE fmt chunk: format tag 0x1234, which no decoder knows
  wav[21] = '\x12';
  auto decoded = DecodeAudio(AsBytes(wav));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument) << decoded.status().ToString();
  EXPECT_NE(decoded.status().message().find("unknown codec"), std::string::npos)
      << decoded.status().ToString();
}

TEST(AudioDecodeTest, TruncatedFilesAreCorrupt) {
  // Cut in half: a WAV's data chunk runs past the end (no length), a FLAC ends in a frame that
  // does not decode, an mp4 loses its index (written last), and an MP3 whose LAME header
  // counts its frames decodes to half of what it declares.
  for (const Case& c : std::vector<Case>{{"a.wav", Tone(16000, 1, 1.5)},
                                         {"a.flac", Tone(48000, 2, 1.5)},
                                         {kBaseMp4, ""},
                                         {"a.mp3", Tone(44100, 2, 1.5) + " -c:a libmp3lame"}}) {
    SCOPED_TRACE(c.name);
    std::string bytes = c.name == kBaseMp4 ? BaseMp4() : SharedMedia().Make(c.name, c.args);
    auto decoded = DecodeAudio(AsBytes(bytes.substr(0, bytes.size() / 2)));
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), StatusCode::kCorrupt) << decoded.status().ToString();
    if (c.name == "a.mp3") {
      EXPECT_NE(decoded.status().message().find("truncated"), std::string::npos)
          << decoded.status().ToString();
    }
  }
}

TEST(AudioDecodeTest, BudgetsRefuseBeforeDecoding) {
  std::string flac = SharedMedia().Make("a.flac", Tone(48000, 2, 1.5));
  auto too_long = DecodeAudio(AsBytes(flac), 16000, {.max_duration_seconds = 1.0});
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("limit"), std::string::npos);
  auto too_many = DecodeAudio(AsBytes(flac), 16000, {.max_audio_channels = 1});
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("2 channels"), std::string::npos);
  EXPECT_EQ(DecodeAudio(AsBytes(flac), 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(DecodeAudio(AsBytes(flac)).ok());
}

TEST(AudioDecodeTest, NotMediaIsInvalidArgument) {
  EXPECT_EQ(DecodeAudio({}).status().code(), StatusCode::kInvalidArgument);
  std::string text = "plain text\n";
  EXPECT_EQ(DecodeAudio(AsBytes(text)).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmpt::media
