#include "mmpt/media/av_probe.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "mmpt/media/av_test_util.h"

namespace mmpt::media {
namespace {

class AvProbeTest : public ::testing::Test {
 protected:
  GeneratedMedia* media_ = &SharedMedia();
};

TEST_F(AvProbeTest, H264Mp4WithAudio) {
  auto info = ProbeAv(AsBytes(BaseMp4()));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->container, "mov,mp4,m4a,3gp,3g2,mj2");
  ASSERT_TRUE(info->video.has_value());
  EXPECT_EQ(info->video->codec, "h264");
  EXPECT_EQ(info->video->width, 320u);
  EXPECT_EQ(info->video->height, 240u);
  EXPECT_NEAR(info->video->fps, 25.0, 1e-9);
  EXPECT_EQ(info->video->frames, 50u);
  EXPECT_TRUE(info->video->frames_exact);
  EXPECT_NEAR(info->video->duration_seconds, 2.0, 0.05);
  EXPECT_EQ(info->video->orientation, 1u);
  ASSERT_TRUE(info->audio.has_value());
  EXPECT_EQ(info->audio->codec, "aac");
  EXPECT_EQ(info->audio->sample_rate, 44100u);
  EXPECT_EQ(info->audio->channels, 2u);
  EXPECT_NEAR(info->audio->duration_seconds, 2.0, 0.1);
}

TEST_F(AvProbeTest, Vp9WebmEstimatesFrames) {
  std::string webm = media_->Make(
      "a.webm", TestPattern(176, 144, 30, 1) + " -c:v libvpx-vp9 -deadline realtime -cpu-used 8");
  auto info = ProbeAv(AsBytes(webm));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->container, "matroska,webm");
  ASSERT_TRUE(info->video.has_value());
  EXPECT_EQ(info->video->codec, "vp9");
  EXPECT_EQ(info->video->width, 176u);
  EXPECT_EQ(info->video->height, 144u);
  EXPECT_NEAR(info->video->fps, 30.0, 1e-6);
  EXPECT_NEAR(static_cast<double>(info->video->frames), 30.0, 1.0);
  EXPECT_FALSE(info->audio.has_value());
}

TEST_F(AvProbeTest, MjpegAvi) {
  std::string avi = media_->Make("a.avi", TestPattern(160, 120, 10, 1) + " -c:v mjpeg");
  auto info = ProbeAv(AsBytes(avi));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->container, "avi");
  EXPECT_EQ(info->video->codec, "mjpeg");
  EXPECT_EQ(info->video->width, 160u);
  EXPECT_EQ(info->video->height, 120u);
  EXPECT_NEAR(info->video->fps, 10.0, 1e-9);
  EXPECT_EQ(info->video->frames, 10u);
}

TEST_F(AvProbeTest, OrientationFromDisplayMatrix) {
  std::string path = (media_->dir() / kBaseMp4).string();
  EXPECT_EQ(ProbeAv(AsBytes(BaseMp4()))->video->orientation, 1u);
  // This ffmpeg turns a "rotate" tag of R into a display matrix that turns the frame R degrees
  // counterclockwise (ffprobe prints rotation=R): EXIF 8 for 90, 3 for 180, 6 for 270.
  for (auto [tag, exif] : {std::pair{90, 8u}, std::pair{180, 3u}, std::pair{270, 6u}}) {
    std::string name = "r" + std::to_string(tag) + ".mp4";
    std::string rotated = media_->Make(
        name, "-i '" + path + "' -c copy -metadata:s:v:0 rotate=" + std::to_string(tag));
    auto info = ProbeAv(AsBytes(rotated));
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->video->orientation, exif) << name;
    EXPECT_EQ(info->video->width, 320u);  // as coded
    EXPECT_EQ(info->video->display_width(), tag == 180 ? 320u : 240u) << name;
    EXPECT_EQ(info->video->display_height(), tag == 180 ? 240u : 320u) << name;
  }
}

struct AudioCase {
  std::string name, args, codec;
  uint32_t rate, channels;
};

TEST_F(AvProbeTest, AudioFormats) {
  for (const AudioCase& c : std::vector<AudioCase>{
           {"a.wav", Tone(16000, 1, 1.5), "pcm_s16le", 16000, 1},
           {"a.flac", Tone(48000, 2, 1.5), "flac", 48000, 2},
           {"a.mp3", Tone(44100, 2, 1.5) + " -c:a libmp3lame", "mp3float", 44100, 2},
           {"a.ogg", Tone(22050, 1, 1.5) + " -c:a libvorbis", "vorbis", 22050, 1}}) {
    SCOPED_TRACE(c.name);
    auto info = ProbeAv(AsBytes(media_->Make(c.name, c.args)));
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_FALSE(info->video.has_value());
    ASSERT_TRUE(info->audio.has_value());
    EXPECT_EQ(info->audio->codec, c.codec);
    EXPECT_EQ(info->audio->sample_rate, c.rate);
    EXPECT_EQ(info->audio->channels, c.channels);
    EXPECT_NEAR(info->audio->duration_seconds, 1.5, 0.1);
    EXPECT_NEAR(info->duration_seconds, 1.5, 0.1);
  }
}

TEST_F(AvProbeTest, TruncatedMp4IsCorrupt) {
  // ffmpeg writes the moov index last: half a file has none.
  std::string mp4 = BaseMp4();
  auto info = ProbeAv(AsBytes(mp4.substr(0, mp4.size() / 2)));
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kCorrupt) << info.status().ToString();
  EXPECT_NE(info.status().message().find("mov"), std::string::npos) << info.status().ToString();
}

TEST_F(AvProbeTest, UnknownCodecIsNamed) {
  std::string mp4 = BaseMp4();
  size_t at = mp4.find("avc1", mp4.find("stsd"));  // the sample entry, not the ftyp brand
  ASSERT_NE(at, std::string::npos);
  std::memcpy(mp4.data() + at, "zzzz", 4);  // a sample entry no decoder knows
  auto info = ProbeAv(AsBytes(mp4));
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument) << info.status().ToString();
  EXPECT_NE(info.status().message().find("zzzz"), std::string::npos) << info.status().ToString();
}

TEST_F(AvProbeTest, ZeroLengthAudioIsCorrupt) {
  std::string wav = media_->Make("z.wav", "-f lavfi -i anullsrc=r=16000:cl=mono -t 0");
  auto info = ProbeAv(AsBytes(wav));
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kCorrupt) << info.status().ToString();
}

TEST_F(AvProbeTest, ZeroChannelsIsAnError) {
  std::string wav = media_->Make("a.wav", Tone(16000, 1, 1.5));  // a copy of AudioFormats'
  ASSERT_GT(wav.size(), 44u);
  ASSERT_EQ(wav.compare(12, 4, "fmt "), 0);
  wav[22] = 0;  // WAVE fmt chunk: channel count, little-endian u16
  wav[23] = 0;
  auto info = ProbeAv(AsBytes(wav));
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find("channel"), std::string::npos) << info.status().ToString();
}

TEST_F(AvProbeTest, HugeDeclaredChunkFailsFast) {
  // A WAV whose LIST chunk declares 1.5 GB: FFmpeg would allocate and read it for seconds
  // (ffprobe takes ~10 s); the allocation cap makes it a quick Corrupt. Found by the fuzzer.
  auto wav = ReadFileToString(MMPT_SOURCE_DIR "/tests/fuzz/av_probe_fuzz/wav_huge_list_chunk.wav");
  ASSERT_TRUE(wav.ok()) << wav.status().ToString();
  auto start = std::chrono::steady_clock::now();
  auto info = ProbeAv(AsBytes(*wav));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kCorrupt) << info.status().ToString();
  EXPECT_LT(seconds, 3.0);
}

TEST_F(AvProbeTest, BudgetsRefuseBeforeDecoding) {
  std::string mp4 = BaseMp4();
  auto small = ProbeAv(AsBytes(mp4), {.max_frame_pixels = 320 * 240 - 1});
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(small.status().message().find("320x240"), std::string::npos);
  auto short_limit = ProbeAv(AsBytes(mp4), {.max_duration_seconds = 1.0});
  ASSERT_FALSE(short_limit.ok());
  EXPECT_NE(short_limit.status().message().find("limit"), std::string::npos);
  auto few_frames = ProbeAv(AsBytes(mp4), {.max_frames = 49});
  ASSERT_FALSE(few_frames.ok());
  EXPECT_NE(few_frames.status().message().find("50 frames"), std::string::npos);
  EXPECT_TRUE(ProbeAv(AsBytes(mp4)).ok());
}

TEST_F(AvProbeTest, HugeDeclaredFrameIsRefused) {
  // A header declaring 100000x100000 (the encoder never sees such a frame): rewrite the size
  // fields of a small AVI's stream format and main header.
  std::string avi = media_->Make("a.avi", TestPattern(160, 120, 10, 1) + " -c:v mjpeg");
  auto patch = [&avi](size_t pos, uint32_t value) {
    for (int i = 0; i < 4; ++i) avi[pos + i] = static_cast<char>((value >> (8 * i)) & 0xff);
  };
  size_t avih = avi.find("avih");
  size_t strf = avi.find("strf");
  ASSERT_NE(avih, std::string::npos);
  ASSERT_NE(strf, std::string::npos);
  patch(avih + 8 + 32, 100000);  // dwWidth
  patch(avih + 8 + 36, 100000);  // dwHeight
  patch(strf + 8 + 4, 100000);   // BITMAPINFOHEADER biWidth
  patch(strf + 8 + 8, 100000);   // biHeight
  auto info = ProbeAv(AsBytes(avi));
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument) << info.status().ToString();
  EXPECT_NE(info.status().message().find("100000x100000"), std::string::npos)
      << info.status().ToString();
}

TEST_F(AvProbeTest, NotMediaIsInvalidArgument) {
  EXPECT_EQ(ProbeAv({}).status().code(), StatusCode::kInvalidArgument);
  std::string text = "just some text, not a container at all\n";
  auto info = ProbeAv(AsBytes(text));
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument) << info.status().ToString();
}

}  // namespace
}  // namespace mmpt::media
