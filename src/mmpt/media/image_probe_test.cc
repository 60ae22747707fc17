#include "mmpt/media/image_probe.h"

#include <gtest/gtest.h>
#include <webp/decode.h>

#include <string>
#include <vector>

#include "mmpt/corpora/image_encode.h"
#include "mmpt/corpora/image_synth.h"

namespace mmpt::media {

using namespace mmpt::corpora;  // test images
namespace {

std::span<const std::byte> ProbeBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

struct ProbeCase {
  std::string name;
  uint32_t channels;
  EncodeOptions options;
  uint32_t frames = 1;
};

// One file of every header variant the probe reads, encoded by the real codecs.
std::vector<ProbeCase> ProbeCases() {
  using F = ImageFormat;
  return {
      {"jpeg_baseline", 3, {.format = F::kJpeg}},
      {"jpeg_progressive", 3, {.format = F::kJpeg, .progressive = true}},
      {"jpeg_gray", 1, {.format = F::kJpeg}},
      {"jpeg_cmyk", 3, {.format = F::kJpeg, .cmyk = true}},
      {"jpeg_exif6", 3, {.format = F::kJpeg, .exif_orientation = 6}},
      {"png_rgb", 3, {.format = F::kPng}},
      {"png_rgba", 4, {.format = F::kPng}},
      {"png_gray", 1, {.format = F::kPng}},
      {"png_gray_alpha", 2, {.format = F::kPng}},
      {"png_palette", 3, {.format = F::kPng, .palette = true}},
      {"png_rgb16", 3, {.format = F::kPng, .png_bit_depth = 16}},
      {"png_exif8", 3, {.format = F::kPng, .exif_orientation = 8}},
      {"webp_lossy", 3, {.format = F::kWebp}},
      {"webp_lossless", 3, {.format = F::kWebp, .lossless = true}},
      {"webp_lossy_alpha", 4, {.format = F::kWebp}},
      {"webp_exif3", 3, {.format = F::kWebp, .exif_orientation = 3}},
      {"webp_animated", 3, {.format = F::kWebp, .frames = 3}, 3},
      {"gif", 3, {.format = F::kGif}},
      {"gif_animated", 3, {.format = F::kGif, .frames = 4}, 4},
      {"bmp", 3, {.format = F::kBmp}},
      {"bmp_top_down", 3, {.format = F::kBmp, .bmp_top_down = true}},
      {"bmp_core", 3, {.format = F::kBmp, .bmp_core_header = true}},
  };
}

constexpr uint32_t kProbeWidth = 67, kProbeHeight = 45;

TEST(ImageProbeTest, ReadsSizeOfEveryVariant) {
  for (const ProbeCase& c : ProbeCases()) {
    SCOPED_TRACE(c.name);
    auto file = SynthesizeImageFile(kProbeWidth, kProbeHeight, c.channels, 7, c.options);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto info = ProbeImage(ProbeBytes(*file));
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->format, c.options.format);
    EXPECT_EQ(info->width, kProbeWidth);
    EXPECT_EQ(info->height, kProbeHeight);
    EXPECT_EQ(info->frames, c.frames);
    uint8_t orientation = c.options.exif_orientation == 0 ? 1 : c.options.exif_orientation;
    EXPECT_EQ(info->exif_orientation, orientation);
  }
}

TEST(ImageProbeTest, LargeSizesSurviveTheFieldWidths) {
  // 14-bit WebP fields, 16-bit JPEG fields: sizes near the top of each range.
  struct {
    ImageFormat format;
    uint32_t width, height;
  } sizes[] = {{ImageFormat::kWebp, 16383, 3},
               {ImageFormat::kJpeg, 3, 65500},
               {ImageFormat::kPng, 70000, 2},
               {ImageFormat::kGif, 40000, 2}};
  for (const auto& s : sizes) {
    auto file =
        SynthesizeImageFile(s.width, s.height, 3, 1, {.format = s.format, .lossless = true});
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto info = ProbeImage(ProbeBytes(*file));
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->width, s.width);
    EXPECT_EQ(info->height, s.height);
  }
}

TEST(ImageProbeTest, JpegSkipsSegmentsAndFillBytes) {
  // SOI, APP0 (JFIF), COM, fill bytes, APP1 without EXIF, then a progressive SOF2.
  std::string jpeg("\xFF\xD8", 2);
  jpeg += std::string("\xFF\xE0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00", 18);
  jpeg += std::string(
      "\xFF\xFE\x00\x05"
      "abc",
      7);
  jpeg += std::string(
      "\xFF\xFF\xFF\xE1\x00\x06"
      "XMP\x00",
      10);
  jpeg += std::string(
      "\xFF\xC2\x00\x11\x08\x01\x2C\x02\x58\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01", 19);
  auto info = ProbeImage(ProbeBytes(jpeg));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->width, 600u);
  EXPECT_EQ(info->height, 300u);
  EXPECT_EQ(info->exif_orientation, 1);

  // The same frame header with height 0 (defined later by DNL) is refused.
  std::string zero = jpeg;
  zero[zero.size() - 14] = 0;
  zero[zero.size() - 13] = 0;
  EXPECT_EQ(ProbeImage(ProbeBytes(zero)).status().code(), StatusCode::kCorrupt);
  // A DHT marker (0xC4) is not a frame header even though it sits in the SOF range.
  std::string dht("\xFF\xD8\xFF\xC4\x00\x08\x00\x01\x2C\x02\x58\x03", 12);
  EXPECT_EQ(ProbeImage(ProbeBytes(dht)).status().code(), StatusCode::kCorrupt);
}

TEST(ImageProbeTest, UnknownAndEmptyAreInvalidArgument) {
  EXPECT_EQ(ProbeImage({}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ProbeImage(ProbeBytes("hello, world: not an image")).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ProbeImage(ProbeBytes(std::string("RIFF\x10\x00\x00\x00WAVEfmt ", 16))).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ImageProbeTest, BmpHeightSignAndRange) {
  auto file = SynthesizeImageFile(5, 4, 3, 1, {.format = ImageFormat::kBmp, .bmp_top_down = true});
  ASSERT_TRUE(file.ok());
  std::string bmp = *file;
  EXPECT_EQ(static_cast<uint8_t>(bmp[25]), 0xFF);  // stored height is −4
  bmp[22] = bmp[23] = bmp[24] = 0;
  bmp[25] = static_cast<char>(0x80);  // INT32_MIN has no positive counterpart
  EXPECT_EQ(ProbeImage(ProbeBytes(bmp)).status().code(), StatusCode::kCorrupt);
}

// Every prefix of every file either fails with Corrupt or reports the full file's size.
TEST(ImageProbeTest, TruncationAtEveryOffset) {
  for (const ProbeCase& c : ProbeCases()) {
    SCOPED_TRACE(c.name);
    auto file = SynthesizeImageFile(kProbeWidth, kProbeHeight, c.channels, 3, c.options);
    ASSERT_TRUE(file.ok());
    int ok_count = 0;
    for (size_t n = 1; n < file->size(); ++n) {
      auto info = ProbeImage(ProbeBytes(*file).first(n));
      if (info.ok()) {
        ++ok_count;
        EXPECT_EQ(info->width, kProbeWidth) << "prefix of " << n << " bytes";
        EXPECT_EQ(info->height, kProbeHeight) << "prefix of " << n << " bytes";
      } else {
        EXPECT_EQ(info.status().code(), StatusCode::kCorrupt)
            << "prefix of " << n << " bytes: " << info.status().ToString();
      }
    }
    // Once the header is complete, every longer prefix probes.
    EXPECT_GT(ok_count, 0);
    EXPECT_EQ(ProbeImage(ProbeBytes(*file).first(0)).status().code(), StatusCode::kInvalidArgument);
  }
}

// Flip every bit of the first 600 bytes: never a crash; an OK probe reports a positive size,
// and for WebP the same size libwebp's own header parser reports.
TEST(ImageProbeTest, BitFlipsGiveErrorOrSaneSize) {
  for (const ProbeCase& c : ProbeCases()) {
    SCOPED_TRACE(c.name);
    auto file = SynthesizeImageFile(kProbeWidth, kProbeHeight, c.channels, 5, c.options);
    ASSERT_TRUE(file.ok());
    std::string bytes = *file;
    size_t limit = std::min<size_t>(bytes.size(), 600);
    for (size_t i = 0; i < limit * 8; ++i) {
      bytes[i / 8] ^= static_cast<char>(1 << (i % 8));
      auto info = ProbeImage(ProbeBytes(bytes));
      if (info.ok()) {
        EXPECT_GT(info->width, 0u);
        EXPECT_GT(info->height, 0u);
        EXPECT_GE(info->frames, 1u);
        EXPECT_GE(info->exif_orientation, 1);
        EXPECT_LE(info->exif_orientation, 8);
        int w = 0, h = 0;
        if (info->format == ImageFormat::kWebp &&
            WebPGetInfo(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &w, &h)) {
          EXPECT_EQ(info->width, static_cast<uint32_t>(w)) << "bit " << i;
          EXPECT_EQ(info->height, static_cast<uint32_t>(h)) << "bit " << i;
        }
      } else {
        EXPECT_TRUE(info.status().code() == StatusCode::kCorrupt ||
                    info.status().code() == StatusCode::kInvalidArgument);
      }
      bytes[i / 8] ^= static_cast<char>(1 << (i % 8));
    }
  }
}

TEST(ImageProbeTest, FormatNames) {
  EXPECT_EQ(ImageFormatName(ImageFormat::kJpeg), "jpeg");
  EXPECT_EQ(ImageFormatName(ImageFormat::kWebp), "webp");
  EXPECT_EQ(ImageFormatName(ImageFormat::kUnknown), "unknown");
}

}  // namespace
}  // namespace mmpt::media
