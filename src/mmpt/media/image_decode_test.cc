#include "mmpt/media/image_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "mmpt/corpora/image_encode.h"
#include "mmpt/corpora/image_synth.h"
#include "mmpt/media/image_preprocess.h"
#include "mmpt/media/image_transform.h"
#include "mmpt/media/patchify.h"
#include "mmpt/media/resize.h"

namespace mmpt::media {

using namespace mmpt::corpora;  // test images
namespace {

std::span<const std::byte> Bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

struct Case {
  std::string name;
  uint32_t channels;
  EncodeOptions options;
  uint32_t decoded_channels;
  bool lossless;  // decoded pixels equal the synthesized ones
};

std::vector<Case> Cases() {
  using F = ImageFormat;
  return {
      {"jpeg", 3, {.format = F::kJpeg}, 3, false},
      {"jpeg_progressive", 3, {.format = F::kJpeg, .progressive = true}, 3, false},
      {"jpeg_gray", 1, {.format = F::kJpeg}, 3, false},
      {"jpeg_cmyk", 3, {.format = F::kJpeg, .cmyk = true}, 3, false},
      {"png_rgb", 3, {.format = F::kPng}, 3, true},
      {"png_rgba", 4, {.format = F::kPng}, 4, true},
      {"png_gray_alpha", 2, {.format = F::kPng}, 4, false},
      {"png_palette", 3, {.format = F::kPng, .palette = true}, 3, false},
      {"png_rgb16", 3, {.format = F::kPng, .png_bit_depth = 16}, 3, true},
      {"webp_lossy", 3, {.format = F::kWebp}, 3, false},
      {"webp_lossless", 3, {.format = F::kWebp, .lossless = true}, 3, true},
      {"webp_animated", 4, {.format = F::kWebp, .lossless = true, .frames = 2}, 4, true},
      {"gif", 3, {.format = F::kGif, .frames = 2}, 3, false},
      {"bmp", 3, {.format = F::kBmp}, 3, true},
      {"bmp_top_down", 3, {.format = F::kBmp, .bmp_top_down = true}, 3, true},
      {"bmp_core", 3, {.format = F::kBmp, .bmp_core_header = true}, 3, true},
  };
}

constexpr uint32_t kWidth = 61, kHeight = 37;

TEST(ImageDecodeTest, DecodesEveryVariant) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    Image source = SynthesizeImage(kWidth, kHeight, c.channels, 11);
    auto file = EncodeImage(source, c.options);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto decoded = DecodeImage(Bytes(*file));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(decoded->image.width, kWidth);
    EXPECT_EQ(decoded->image.height, kHeight);
    EXPECT_EQ(decoded->image.channels, c.decoded_channels);
    ASSERT_EQ(decoded->image.pixels.size(), decoded->image.row_bytes() * kHeight);
    if (c.lossless) {
      // Colour under full transparency is not kept by every codec; compare what is seen.
      EXPECT_EQ(CompositeOnWhite(decoded->image).pixels, CompositeOnWhite(source).pixels);
    }
    if (!c.lossless && c.channels == 3 && !c.options.palette &&
        c.options.format != ImageFormat::kGif) {
      // Lossy codecs stay close to the source on average.
      double sum = 0;
      for (size_t i = 0; i < source.pixels.size(); ++i) {
        sum += std::abs(int{decoded->image.pixels[i]} - int{source.pixels[i]});
      }
      EXPECT_LT(sum / source.pixels.size(), 12.0);
    }
  }
}

// Truncated or bit-flipped files: an error, or (for damage past the data a decoder reads) the
// right size; never a crash. Run under the dev preset, ASan checks the reads.
TEST(ImageDecodeTest, DamagedFilesFailCleanly) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto file = SynthesizeImageFile(kWidth, kHeight, c.channels, 13, c.options);
    ASSERT_TRUE(file.ok());
    size_t step = std::max<size_t>(1, file->size() / 97);
    for (size_t n = 0; n < file->size(); n += step) {
      auto decoded = DecodeImage(Bytes(*file).first(n));
      // Every file here needs more than its first half to decode its first frame.
      if (n < file->size() / 2) {
        EXPECT_FALSE(decoded.ok()) << "prefix of " << n << " bytes";
      }
      if (decoded.ok()) {
        EXPECT_EQ(decoded->image.width, kWidth) << n;
        EXPECT_EQ(decoded->image.height, kHeight) << n;
      }
    }
    std::string bytes = *file;
    for (size_t i = 0; i < bytes.size(); i += 7) {
      bytes[i] = static_cast<char>(bytes[i] ^ 0x5A);
      auto decoded = DecodeImage(Bytes(bytes));
      if (decoded.ok()) {
        EXPECT_EQ(decoded->image.pixels.size(), decoded->image.row_bytes() * decoded->image.height);
      }
      bytes[i] = static_cast<char>(bytes[i] ^ 0x5A);
    }
  }
}

TEST(ImageDecodeTest, PixelBudgetRefusesBeforeDecoding) {
  // A PNG header claiming 100000 × 100000 pixels and no data at all.
  std::string bomb(
      "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x01\x86\xa0\x00\x01\x86\xa0\x08\x02"
      "\x00\x00\x00\x00\x00\x00\x00",
      33);
  auto decoded = DecodeImage(Bytes(bomb));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(decoded.status().message().find("decode budget"), std::string::npos)
      << decoded.status().message();
  auto file = SynthesizeImageFile(100, 100, 3, 1, {.format = ImageFormat::kPng});
  ASSERT_TRUE(file.ok());
  EXPECT_FALSE(DecodeImage(Bytes(*file), {.max_pixels = 9999}).ok());
  EXPECT_TRUE(DecodeImage(Bytes(*file), {.max_pixels = 10000}).ok());
}

TEST(ImageDecodeTest, JpegDctScalingShrinks) {
  auto file = SynthesizeImageFile(640, 480, 3, 1, {.format = ImageFormat::kJpeg});
  ASSERT_TRUE(file.ok());
  auto decoded = DecodeImage(Bytes(*file), {.jpeg_scale_denom = 4});
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->image.width, 160u);
  EXPECT_EQ(decoded->image.height, 120u);
  EXPECT_FALSE(DecodeImage(Bytes(*file), {.jpeg_scale_denom = 3}).ok());
}

Image Numbered(uint32_t width, uint32_t height) {
  Image image{width, height, 3, PixelBuffer(size_t{width} * height * 3)};
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      uint8_t* p = image.row(y) + 3 * x;
      p[0] = static_cast<uint8_t>(x);
      p[1] = static_cast<uint8_t>(y);
      p[2] = static_cast<uint8_t>(x + 2 * y);
    }
  }
  return image;
}

TEST(ImageTransformTest, OrientationsMoveCornersLikePillow) {
  Image image = Numbered(3, 2);  // pixel (x, y) holds red x, green y
  auto at = [](const Image& im, uint32_t x, uint32_t y) {
    const uint8_t* p = im.row(y) + 3 * x;
    return std::pair<int, int>(p[0], p[1]);
  };
  // 6: rotate 90° clockwise; the bottom-left source pixel lands at the top-left.
  Image six = ApplyExifOrientation(image, 6);
  EXPECT_EQ(six.width, 2u);
  EXPECT_EQ(six.height, 3u);
  EXPECT_EQ(at(six, 0, 0), std::make_pair(0, 1));
  EXPECT_EQ(at(six, 1, 0), std::make_pair(0, 0));
  // 8: rotate 90° counter-clockwise; the top-right source pixel lands at the top-left.
  Image eight = ApplyExifOrientation(image, 8);
  EXPECT_EQ(at(eight, 0, 0), std::make_pair(2, 0));
  // 3: rotate 180°.
  EXPECT_EQ(at(ApplyExifOrientation(image, 3), 0, 0), std::make_pair(2, 1));
  // 1 and out-of-range values change nothing.
  EXPECT_EQ(ApplyExifOrientation(image, 1).pixels, image.pixels);
  EXPECT_EQ(ApplyExifOrientation(image, 9).pixels, image.pixels);
}

TEST(ImageTransformTest, CompositeOnWhite) {
  Image rgba{2, 1, 4, {10, 20, 30, 0, 10, 20, 30, 255}};
  Image rgb = CompositeOnWhite(rgba);
  EXPECT_EQ(rgb.channels, 3u);
  EXPECT_EQ(rgb.pixels, (PixelBuffer{255, 255, 255, 10, 20, 30}));
}

TEST(ResizeTest, KeepsConstantsAndSizes) {
  Image flat{50, 30, 3, PixelBuffer(50 * 30 * 3, 77)};
  for (auto [w, h] : {std::pair{28u, 28u}, {112u, 56u}, {50u, 7u}, {3u, 30u}}) {
    auto out = ResizeBicubic(flat, w, h);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->width, w);
    EXPECT_EQ(out->height, h);
    for (uint8_t v : out->pixels) ASSERT_EQ(v, 77);
  }
  EXPECT_EQ(ResizeBicubic(flat, 50, 30)->pixels, flat.pixels);
  EXPECT_FALSE(ResizeBicubic(flat, 0, 30).ok());
}

// torchvision's rule keeps flat images flat, sizes as asked, one-axis resizes and copies, and
// differs from Pillow's (which rounds between its passes) by at most a few levels.
TEST(ResizeTest, TorchvisionRule) {
  Image flat{50, 30, 3, PixelBuffer(50 * 30 * 3, 77)};
  Image out;
  for (auto [w, h] : {std::pair{28u, 28u}, {112u, 56u}, {50u, 7u}, {3u, 30u}}) {
    ASSERT_TRUE(ResizeTorchBicubicInto(flat, w, h, &out).ok());
    EXPECT_EQ(out.width, w);
    EXPECT_EQ(out.height, h);
    for (uint8_t v : out.pixels) ASSERT_EQ(v, 77);
  }
  ASSERT_TRUE(ResizeTorchBicubicInto(flat, 50, 30, &out).ok());
  EXPECT_EQ(out.pixels, flat.pixels);
  EXPECT_FALSE(ResizeTorchBicubicInto(flat, 0, 30, &out).ok());
  Image image = SynthesizeImage(301, 97, 3, 4);
  Image pillow;
  ASSERT_TRUE(ResizeBicubicInto(image, 150, 200, BicubicRule::kTorchvision, &out).ok());
  ASSERT_TRUE(ResizeBicubicInto(image, 150, 200, BicubicRule::kPillow, &pillow).ok());
  int most = 0;
  for (size_t i = 0; i < out.pixels.size(); ++i) {
    most = std::max(most, std::abs(int{out.pixels[i]} - int{pillow.pixels[i]}));
  }
  EXPECT_GT(most, 0);
  EXPECT_LE(most, 32);
}

// The vectorized and portable paths (unrolled fixed taps, generic loop) agree bit for bit,
// across reductions from none to 6× and enlargements, and on narrow images.
TEST(ResizeTest, SimdAndPortablePathsAgree) {
  Image image = SynthesizeImage(301, 97, 3, 4);
  for (uint32_t w : {301u, 300u, 290u, 200u, 151u, 100u, 75u, 50u, 30u, 5u, 2u, 302u, 640u}) {
    SCOPED_TRACE(w);
    auto fast = ResizeBicubic(image, w, 60);
    auto portable = ResizeBicubic(image, w, 60, /*allow_simd=*/false);
    ASSERT_TRUE(fast.ok() && portable.ok());
    EXPECT_EQ(fast->pixels, portable->pixels);
  }
  Image narrow = SynthesizeImage(7, 40, 3, 5);  // narrower than the kernel: generic loop
  EXPECT_EQ(ResizeBicubic(narrow, 2, 40)->pixels, ResizeBicubic(narrow, 2, 40, false)->pixels);
}

TEST(PatchifyTest, QwenElementOrder) {
  PatchConfig config;
  Image image = Numbered(56, 28);  // grid 2 × 4 patches of 14
  auto grid = PatchGrid(28, 56, config);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->t, 1u);
  EXPECT_EQ(grid->h, 2u);
  EXPECT_EQ(grid->w, 4u);
  const uint64_t dim = PatchDim(config);
  ASSERT_EQ(dim, 3u * 2 * 14 * 14);
  std::vector<float> out(grid->patches() * dim);
  ASSERT_TRUE(NormalizePatchify(image, config, out).ok());
  auto normalized = [&](int c, int v) {
    return (static_cast<float>(v * (1.0 / 255.0)) - config.mean[c]) / config.std[c];
  };
  // Rows go (h/2, w/2, 2, 2): row 5 is merge block (0, 1), sub-patch (0, 1) → patch (0, 3).
  // Inside a row: (channel, temporal, y, x); channel 1 (green = y), slot 1, y 6, x 9.
  size_t row = 5, col = 1 * 2 * 196 + 1 * 196 + 6 * 14 + 9;
  EXPECT_EQ(out[row * dim + col], normalized(1, 6));
  // Channel 0 (red = x) of patch (0, 3) at x 9 is source column 3·14 + 9.
  EXPECT_EQ(out[row * dim + 0 * 196 + 6 * 14 + 9], normalized(0, 51));
  // Row 2 is merge block (0, 0), sub-patch (1, 0) → patch (1, 0): green = 14 + y.
  EXPECT_EQ(out[2 * dim + 1 * 2 * 196 + 3 * 14 + 4], normalized(1, 17));
  EXPECT_FALSE(NormalizePatchify(image, config, std::span(out).first(10)).ok());
  EXPECT_FALSE(PatchGrid(30, 56, config).ok());
}

TEST(ImagePreprocessTest, SizeFromProbeMatchesPipeline) {
  auto file =
      SynthesizeImageFile(640, 427, 3, 2, {.format = ImageFormat::kJpeg, .exif_orientation = 6});
  ASSERT_TRUE(file.ok());
  auto info = ProbeImage(Bytes(*file));
  ASSERT_TRUE(info.ok());
  auto size = PreprocessedSize(*info, ResizeRule{});
  ASSERT_TRUE(size.ok());
  EXPECT_GT(size->height, size->width);  // orientation 6 makes it portrait
  auto out = PreprocessImage(Bytes(*file));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->height, size->height);
  EXPECT_EQ(out->width, size->width);
  EXPECT_EQ(out->pixel_values.size(), out->grid.patches() * PatchDim(PatchConfig{}));
  std::vector<float> buffer(out->pixel_values.size());
  auto grid = PreprocessImageInto(Bytes(*file), {}, buffer);
  ASSERT_TRUE(grid.ok());
  EXPECT_TRUE(
      std::equal(buffer.begin(), buffer.end(), out->pixel_values.begin(), out->pixel_values.end()));
  EXPECT_FALSE(PreprocessImageInto(Bytes(*file), {}, std::span(buffer).first(1)).ok());
}

}  // namespace
}  // namespace mmpt::media
