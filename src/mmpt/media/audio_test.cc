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

// The reference: `ffmpeg -i FILE -ar RATE -f f32le` keeping every channel (no down-mix), then
// the mean over the `channels` channels.
std::vector<float> FfmpegMean(const std::string& name, uint32_t rate, uint32_t channels) {
  std::string raw = SharedMedia().Make(name + "." + std::to_string(rate) + ".f32",
                                       "-i '" + (SharedMedia().dir() / name).string() + "' -ar " +
                                           std::to_string(rate) + " -f f32le");
  std::vector<float> interleaved(raw.size() / sizeof(float));
  std::memcpy(interleaved.data(), raw.data(), interleaved.size() * sizeof(float));
  std::vector<float> mean(interleaved.size() / channels);
  for (size_t i = 0; i < mean.size(); ++i) {
    double sum = 0;
    for (uint32_t c = 0; c < channels; ++c) sum += interleaved[i * channels + c];
    mean[i] = static_cast<float>(sum / channels);
  }
  return mean;
}

// ffmpeg arguments for `channels` sines of different pitches (300, 500, ... Hz), one per
// channel, so a mix that weighs channels unequally shows.
std::string Tones(int rate, int channels, double seconds) {
  std::string args;
  for (int c = 0; c < channels; ++c) {
    args += "-f lavfi -i sine=frequency=" + std::to_string(300 + 200 * c) +
            ":sample_rate=" + std::to_string(rate) + ":duration=" + std::to_string(seconds) + " ";
  }
  return args + "-filter_complex amerge=inputs=" + std::to_string(channels);
}

struct DecodeCase {
  std::string name, args;
  uint32_t channels = 1;
};

TEST(AudioDecodeTest, IsTheChannelMeanOfTheFfmpegDecode) {
  for (const DecodeCase& c :
       std::vector<DecodeCase>{{"a.wav", Tone(16000, 1, 1.5), 1},
                               {"s.wav", Tones(44100, 2, 1.5), 2},
                               {"a.flac", Tones(48000, 2, 1.5), 2},
                               {"a.mp3", Tones(44100, 2, 1.5) + " -c:a libmp3lame", 2},
                               {"a.ogg", Tone(22050, 1, 1.5) + " -c:a libvorbis", 1},
                               {"six.m4a", Tones(48000, 6, 1) + " -c:a aac", 6}}) {
    SCOPED_TRACE(c.name);
    std::string bytes = SharedMedia().Make(c.name, c.args);
    for (uint32_t rate : {16000u, 8000u}) {
      auto decoded = DecodeAudio(AsBytes(bytes), rate);
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      EXPECT_EQ(decoded->sample_rate, rate);
      EXPECT_EQ(decoded->source.channels, c.channels);
      std::vector<float> expected = FfmpegMean(c.name, rate, c.channels);
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
  std::vector<float> expected = FfmpegMean(kBaseMp4, 16000, 2);
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
  for (const DecodeCase& c :
       std::vector<DecodeCase>{{"a.wav", Tone(16000, 1, 1.5)},
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
