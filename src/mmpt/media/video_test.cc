#include "mmpt/media/video.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "mmpt/media/av_test_util.h"
#include "mmpt/media/image_transform.h"

namespace mmpt::media {
namespace {

TEST(SampleVideoTest, CountFollowsFpsWithinBounds) {
  // 2 s at 25 fps: 4 frames at 2 fps, from round(linspace(0, 49, 4)).
  auto s = SampleVideo(50, 25.0, 240, 320);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->frame_indices, (std::vector<uint64_t>{0, 16, 33, 49}));
  EXPECT_DOUBLE_EQ(s->sample_fps, 4.0 / 50 * 25);
  // 10 s at 30 fps: 20 frames; 1 s: min_frames (4); 7 frames at 2 fps: all there are, floored
  // to the factor (6).
  EXPECT_EQ(SampleVideo(300, 30.0, 240, 320)->frame_indices.size(), 20u);
  EXPECT_EQ(SampleVideo(30, 30.0, 240, 320)->frame_indices.size(), 4u);
  EXPECT_EQ(SampleVideo(7, 2.0, 240, 320)->frame_indices.size(), 6u);
  // An hour at 30 fps: max_frames.
  auto hour = SampleVideo(108000, 30.0, 1080, 1920);
  ASSERT_TRUE(hour.ok());
  EXPECT_EQ(hour->frame_indices.size(), 768u);
  EXPECT_EQ(hour->frame_indices.front(), 0u);
  EXPECT_EQ(hour->frame_indices.back(), 107999u);
}

TEST(SampleVideoTest, TiesRoundToEven) {
  // linspace(0, 7, 3) = 0, 3.5, 7: the half goes to 4 (torch.round, like Python's round).
  VideoSamplingRule rule;
  rule.nframes = 3;  // rounds (half to even) to 4 frames
  auto s = SampleVideo(8, 30.0, 64, 64, rule);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->frame_indices.size(), 4u);
  rule.nframes = 0;
  rule.min_frames = 3;  // ceil to 4
  rule.max_frames = 3;  // floor to 2
  EXPECT_EQ(SampleVideo(8, 30.0, 64, 64, rule)->frame_indices, (std::vector<uint64_t>{0, 7}));
}

TEST(SampleVideoTest, FramePixelsFromTheTotalBudget) {
  // Short video: the per-frame cap (768·28²) applies.
  auto short_video = SampleVideo(100, 25.0, 1080, 1920);
  ASSERT_TRUE(short_video.ok());
  uint64_t area = uint64_t{short_video->size.height} * short_video->size.width;
  EXPECT_LE(area, 768u * 28 * 28);
  EXPECT_GT(area, 600u * 28 * 28);
  // 768 frames: total_pixels / 768 · 2 = 235200 per frame.
  auto long_video = SampleVideo(108000, 30.0, 1080, 1920);
  area = uint64_t{long_video->size.height} * long_video->size.width;
  EXPECT_LE(area, 235200u);
  EXPECT_EQ(long_video->size.height % 28, 0u);
  EXPECT_EQ(long_video->size.width % 28, 0u);
  // 712 frames: the cap is 253698.876..., and its fraction moves the size (floored: 644x364).
  auto fractional = SampleVideo(712, 2.0, 890, 500);
  ASSERT_TRUE(fractional.ok()) << fractional.status().ToString();
  EXPECT_EQ(fractional->frame_indices.size(), 712u);
  EXPECT_EQ(fractional->size.height, 672u);
  EXPECT_EQ(fractional->size.width, 364u);
  // A tiny budget never sets the cap below ⌊1.05 · min_pixels⌋ = 105369; SmartResize's
  // shrinking branch floors both sides, landing below min_pixels, as the reference does.
  VideoSamplingRule rule;
  rule.total_pixels = 1000;
  auto tiny = SampleVideo(100, 25.0, 1080, 1920, rule);
  EXPECT_EQ(tiny->size.height, 224u);
  EXPECT_EQ(tiny->size.width, 420u);
}

// Hugging Face's Qwen3VLVideoProcessor: n = int(length · fps), not made even (the last index
// repeats to fill the temporal patch, as its patchify repeats the last frame); NumPy's float64
// linspace; one budget over all frames (video smart_resize). Figures from
// tests/python/qwen3_vl_video_ref.py.
TEST(SampleVideoTest, Qwen3ProcessorRule) {
  VideoSamplingRule rule = VideoSamplingRule::ForFactor(32);
  rule.budget = VideoBudget::kAllFrames;
  rule.min_pixels = 4096;
  rule.max_pixels = 25165824;
  auto s = SampleVideo(61, 24.0, 180, 320, rule);  // 2.54 s: int(5.08) = 5 frames
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->frame_indices, (std::vector<uint64_t>{0, 15, 30, 45, 60, 60}));
  EXPECT_EQ(s->size.height, 192u);
  EXPECT_EQ(s->size.width, 320u);
  EXPECT_EQ(s->GroupSeconds(2), (std::vector<double>{0.3125, 1.5625, 2.5}));
  rule.nframes = 3;  // linspace(0, 7, 3) = 0, 3.5, 7: the half goes to 4
  EXPECT_EQ(SampleVideo(8, 30.0, 64, 64, rule)->frame_indices, (std::vector<uint64_t>{0, 4, 7, 7}));
  rule.nframes = 0;
  auto big = SampleVideo(1500, 30.0, 1080, 1920, rule);  // 100 frames of 1088x1920 shrink
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->size.height, 352u);
  EXPECT_EQ(big->size.width, 640u);
  // A side under the factor is first scaled up to it (Python's int() truncates).
  auto thin = VideoSmartResize(4, 20, 64, 32, 2, 4096, 25165824, 200);
  ASSERT_TRUE(thin.ok());
  EXPECT_EQ(thin->height, 32u);
  EXPECT_EQ(thin->width, 96u);
}

// A clip (qwen-vl-utils' calculate_video_frame_range): frames ⌈start · fps⌉ to ⌊end · fps⌋,
// sampled as a video of that many frames whose indices stay the video's own.
TEST(SampleVideoTest, AClipIsSampledWithinItsFrames) {
  auto range = ClipFrames(61, 24.0, {500, 2000});
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  EXPECT_EQ(range->first, 12u);
  EXPECT_EQ(range->last, 48u);
  auto s = SampleVideo(61, 24.0, 180, 320, VideoSamplingRule::ForFactor(32), {500, 2000});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->frame_indices, (std::vector<uint64_t>{12, 24, 36, 48}));
  EXPECT_EQ(s->GroupSeconds(2), (std::vector<double>{0.75, 1.75}));
  EXPECT_EQ(ClipFrames(61, 24.0, {0, 100000})->last, 60u);  // the end is clamped
  EXPECT_FALSE(ClipFrames(61, 24.0, {2000, 2010}).ok());    // nothing left to sample
}

TEST(SampleVideoTest, TooShortIsAnError) {
  auto one = SampleVideo(1, 30.0, 64, 64);
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(SampleVideo(100, 0.0, 64, 64).ok());
}

class VideoDecodeTest : public ::testing::Test {
 protected:
  GeneratedMedia* media_ = &SharedMedia();
};

// Frames reached by seeking equal the same frames reached by decoding everything in order.
TEST_F(VideoDecodeTest, SeekedFramesEqualSequentialDecode) {
  for (const auto& [name, args] : std::vector<std::pair<std::string, std::string>>{
           {"gop.mp4", TestPattern(96, 64, 25, 3) + " -c:v libx264 -g 10 -bf 2 -pix_fmt yuv420p"},
           {"gop.webm",
            TestPattern(96, 64, 25, 3) + " -c:v libvpx-vp9 -g 10 -deadline realtime -cpu-used 8"},
           {"all.avi", TestPattern(96, 64, 25, 3) + " -c:v mjpeg"}}) {
    SCOPED_TRACE(name);
    std::string bytes = media_->Make(name, args);
    uint64_t total = 0;
    std::vector<uint64_t> all(75);
    std::iota(all.begin(), all.end(), 0);
    auto every = DecodeVideoFrames(AsBytes(bytes), all, {}, &total);
    ASSERT_TRUE(every.ok()) << every.status().ToString();
    EXPECT_EQ(total, 75u);
    std::vector<uint64_t> chosen = {0, 9, 10, 11, 37, 38, 38, 61, 74};
    auto some = DecodeVideoFrames(AsBytes(bytes), chosen);
    ASSERT_TRUE(some.ok()) << some.status().ToString();
    ASSERT_EQ(some->size(), chosen.size());
    for (size_t k = 0; k < chosen.size(); ++k) {
      const Image& a = (*some)[k];
      const Image& b = (*every)[chosen[k]];
      EXPECT_EQ(a.width, 96u);
      EXPECT_EQ(a.height, 64u);
      EXPECT_TRUE(a.pixels == b.pixels) << "frame " << chosen[k];
    }
    // Neighbouring frames of a moving pattern differ: equality above is not vacuous.
    EXPECT_FALSE((*every)[10].pixels == (*every)[11].pixels);
    // A video above the frame budget is refused (by the probe, or by the packet count).
    auto counted = DecodeVideoFrames(AsBytes(bytes), std::vector<uint64_t>{0}, {.max_frames = 74});
    ASSERT_FALSE(counted.ok());
    EXPECT_EQ(counted.status().code(), StatusCode::kInvalidArgument);
    auto past = DecodeVideoFrames(AsBytes(bytes), std::vector<uint64_t>{75});
    ASSERT_FALSE(past.ok());
    EXPECT_EQ(past.status().code(), StatusCode::kOutOfRange);
  }
}

TEST_F(VideoDecodeTest, PreprocessGivesQwenInputs) {
  std::string mp4 = media_->Make("p.mp4", TestPattern(320, 240, 25, 4) + " -c:v libx264 -g 12");
  auto video = PreprocessVideo(AsBytes(mp4));
  ASSERT_TRUE(video.ok()) << video.status().ToString();
  // 100 frames at 25 fps, 2 fps: 8 frames, 4 temporal patches.
  EXPECT_EQ(video->sampling.total_frames, 100u);
  EXPECT_EQ(video->sampling.frame_indices, (std::vector<uint64_t>{0, 14, 28, 42, 57, 71, 85, 99}));
  EXPECT_DOUBLE_EQ(video->sampling.sample_fps, 2.0);
  EXPECT_DOUBLE_EQ(video->second_per_grid_t, 1.0);
  // 320x240 is below 128·28² pixels: scaled up to 392x280 (both multiples of 28).
  EXPECT_EQ(video->height, 280u);
  EXPECT_EQ(video->width, 392u);
  EXPECT_EQ(video->grid.t, 4u);
  EXPECT_EQ(video->grid.h, 20u);
  EXPECT_EQ(video->grid.w, 28u);
  EXPECT_EQ(video->pixel_values.size(), video->grid.patches() * 1176);
}

// A rotate tag's display matrix turns the decoded frames: each is the coded frame turned as
// the tag's EXIF orientation says, and the sampling takes the displayed size.
TEST_F(VideoDecodeTest, RotatedFramesAreDecodedAsDisplayed) {
  std::string coded = media_->Make("coded.mp4", TestPattern(64, 48, 10, 1) + " -c:v libx264");
  std::string path = (media_->dir() / "coded.mp4").string();
  const std::vector<uint64_t> first = {0};
  auto upright = DecodeVideoFrames(AsBytes(coded), first);
  ASSERT_TRUE(upright.ok()) << upright.status().ToString();
  for (auto [tag, exif] : {std::pair{90, 8}, std::pair{180, 3}, std::pair{270, 6}}) {
    SCOPED_TRACE(tag);
    std::string rotated =
        media_->Make("turned" + std::to_string(tag) + ".mp4",
                     "-i '" + path + "' -c copy -metadata:s:v:0 rotate=" + std::to_string(tag));
    auto frames = DecodeVideoFrames(AsBytes(rotated), first);
    ASSERT_TRUE(frames.ok()) << frames.status().ToString();
    const Image want = ApplyExifOrientation((*upright)[0], static_cast<uint8_t>(exif));
    EXPECT_EQ((*frames)[0].width, tag == 180 ? 64u : 48u);
    EXPECT_TRUE((*frames)[0].pixels == want.pixels);
    auto video = PreprocessVideo(AsBytes(rotated));
    ASSERT_TRUE(video.ok()) << video.status().ToString();
    // 48x64 portrait, scaled up to 128 tokens or more: 280x392 (64x48 gives 392x280).
    EXPECT_EQ(video->width, tag == 180 ? 392u : 280u);
    EXPECT_EQ(video->height, tag == 180 ? 280u : 392u);
  }
}

// The two resize rules are both selectable and differ; torchvision's is the default.
TEST_F(VideoDecodeTest, ResizeRuleIsSelectable) {
  std::string mp4 = media_->Make("coded.mp4", TestPattern(64, 48, 10, 1) + " -c:v libx264");
  EXPECT_EQ(VideoSamplingRule{}.resize, BicubicRule::kTorchvision);
  VideoPreprocessConfig pillow;
  pillow.sampling.resize = BicubicRule::kPillow;
  auto by_torch = PreprocessVideo(AsBytes(mp4));
  auto by_pillow = PreprocessVideo(AsBytes(mp4), pillow);
  ASSERT_TRUE(by_torch.ok() && by_pillow.ok());
  EXPECT_EQ(by_torch->pixel_values.size(), by_pillow->pixel_values.size());
  EXPECT_FALSE(by_torch->pixel_values == by_pillow->pixel_values);
}

TEST_F(VideoDecodeTest, ErrorsAreClear) {
  std::string mp4 = BaseMp4();
  auto truncated = PreprocessVideo(AsBytes(mp4.substr(0, mp4.size() / 3)));
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().code(), StatusCode::kCorrupt);
  std::string wav = media_->Make("a.wav", Tone(16000, 1, 1.5));  // as AvProbeTest's
  auto audio_only = PreprocessVideo(AsBytes(wav));
  ASSERT_FALSE(audio_only.ok());
  EXPECT_NE(audio_only.status().message().find("no video stream"), std::string::npos);
  VideoPreprocessConfig config;
  config.patch.temporal_patch_size = 1;
  EXPECT_EQ(PreprocessVideo(AsBytes(mp4), config).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmpt::media
