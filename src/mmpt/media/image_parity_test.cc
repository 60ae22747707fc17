// Pixel parity with the Hugging Face way of preprocessing (Pillow + NumPy), reproduced by
// tests/media/hf_image_reference.py and run with Debian's /usr/bin/python3.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/subprocess.h"
#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/corpora/image_synth.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/media/image_preprocess.h"

namespace mmpt::media {

using namespace mmpt::corpora;  // test images
namespace {

namespace fs = std::filesystem;

const char* kScript = MMPT_SOURCE_DIR "/tests/media/hf_image_reference.py";

std::string RunCommand(const std::string& command) {
  auto out = mmpt::RunCommand(command);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *std::move(out) : std::string();
}

struct ParityCase {
  std::string name;
  uint32_t width, height, channels;
  EncodeOptions options;
};

std::vector<ParityCase> ParityCases() {
  using F = ImageFormat;
  std::vector<ParityCase> cases;
  // Real COCO image sizes (landscape and portrait), as baseline JPEGs.
  auto coco = corpora::ReadCocoCaptions(corpora::RealDataPath(corpora::kCocoCaptionsFile));
  EXPECT_TRUE(coco.ok()) << coco.status().ToString();
  for (size_t i = 0; coco.ok() && i < 8 && i < coco->images.size(); ++i) {
    const corpora::CocoImage& image = coco->images[i];
    cases.push_back(
        {"coco" + std::to_string(i) + ".jpg", image.width, image.height, 3, {.format = F::kJpeg}});
  }
  EXPECT_EQ(cases.size(), 8u);
  cases.push_back(
      {"portrait_progressive.jpg", 480, 640, 3, {.format = F::kJpeg, .progressive = true}});
  cases.push_back({"gray.jpg", 500, 375, 1, {.format = F::kJpeg}});
  cases.push_back({"cmyk.jpg", 400, 300, 3, {.format = F::kJpeg, .cmyk = true}});
  for (uint8_t o = 2; o <= 8; ++o) {
    cases.push_back({"exif" + std::to_string(o) + ".jpg",
                     640,
                     427,
                     3,
                     {.format = F::kJpeg, .exif_orientation = o}});
  }
  cases.push_back({"wide.jpg", 3000, 60, 3, {.format = F::kJpeg}});
  cases.push_back({"tall.png", 50, 2200, 3, {.format = F::kPng}});
  cases.push_back({"tiny.png", 20, 17, 3, {.format = F::kPng}});
  cases.push_back({"large.jpg", 2400, 1800, 3, {.format = F::kJpeg}});
  // Reductions of 3.5× (17 taps, the widest unrolled kernel) and 5.2× (the generic loop).
  cases.push_back({"photo12mp.jpg", 4032, 3024, 3, {.format = F::kJpeg}});
  cases.push_back({"photo24mp.jpg", 6000, 4000, 3, {.format = F::kJpeg, .progressive = true}});
  cases.push_back({"rgba.png", 300, 200, 4, {.format = F::kPng}});
  cases.push_back({"gray_alpha.png", 210, 150, 2, {.format = F::kPng}});
  cases.push_back({"palette.png", 333, 222, 3, {.format = F::kPng, .palette = true}});
  cases.push_back({"rgb16.png", 256, 190, 3, {.format = F::kPng, .png_bit_depth = 16}});
  cases.push_back({"rgba16.png", 190, 256, 4, {.format = F::kPng, .png_bit_depth = 16}});
  cases.push_back({"gray16.png", 200, 200, 1, {.format = F::kPng, .png_bit_depth = 16}});
  cases.push_back({"exif6.png", 300, 180, 3, {.format = F::kPng, .exif_orientation = 6}});
  cases.push_back({"lossy.webp", 640, 480, 3, {.format = F::kWebp}});
  cases.push_back({"lossless_alpha.webp", 320, 240, 4, {.format = F::kWebp, .lossless = true}});
  cases.push_back({"animated.webp", 200, 160, 3, {.format = F::kWebp, .frames = 3}});
  cases.push_back({"exif8.webp", 256, 128, 3, {.format = F::kWebp, .exif_orientation = 8}});
  cases.push_back({"frames.gif", 300, 200, 3, {.format = F::kGif, .frames = 2}});
  cases.push_back({"bottom_up.bmp", 250, 170, 3, {.format = F::kBmp}});
  cases.push_back({"top_down.bmp", 170, 250, 3, {.format = F::kBmp, .bmp_top_down = true}});
  cases.push_back({"core.bmp", 120, 90, 3, {.format = F::kBmp, .bmp_core_header = true}});
  return cases;
}

// One 8-bit level, in normalized units: 1/255 of the [0, 1] range divided by the largest std.
double OneLevel() {
  PatchConfig config;
  return (1.0 / 255.0) / std::min({config.std[0], config.std[1], config.std[2]});
}

TEST(ImageParityTest, MatchesPillowAndNumpyReference) {
  fs::path dir = test_util::FreshDir("parity");
  fs::create_directories(dir);
  std::vector<ParityCase> cases = ParityCases();
  std::string names;
  for (size_t i = 0; i < cases.size(); ++i) {
    const ParityCase& c = cases[i];
    auto file = SynthesizeImageFile(c.width, c.height, c.channels, 1000 + i, c.options);
    ASSERT_TRUE(file.ok()) << c.name << ": " << file.status().ToString();
    std::ofstream(dir / c.name, std::ios::binary) << *file;
    names += " " + c.name;
  }
  RunCommand(std::string("/usr/bin/python3 ") + kScript + " reference " + dir.string() + names);
  std::ifstream reference(dir / "reference.txt");
  ASSERT_TRUE(reference.good()) << "the Python reference wrote no results";
  std::string name;
  uint32_t t, h, w, rows, cols;
  size_t checked = 0;
  while (reference >> name >> t >> h >> w >> rows >> cols) {
    SCOPED_TRACE(name);
    auto bytes = MappedFile::Open((dir / name).string());
    ASSERT_TRUE(bytes.ok());
    auto ours = PreprocessImage(bytes->bytes());
    ASSERT_TRUE(ours.ok()) << ours.status().ToString();
    EXPECT_EQ(ours->grid.t, t);
    EXPECT_EQ(ours->grid.h, h);
    EXPECT_EQ(ours->grid.w, w);
    ASSERT_EQ(ours->pixel_values.size(), size_t{rows} * cols);
    auto theirs = MappedFile::Open((dir / (name + ".f32")).string());
    ASSERT_TRUE(theirs.ok());
    ASSERT_EQ(theirs->size_bytes(), size_t{rows} * cols * sizeof(float));
    const auto* ref = reinterpret_cast<const float*>(theirs->bytes().data());
    double sum = 0, worst = 0;
    for (size_t i = 0; i < ours->pixel_values.size(); ++i) {
      double d = std::fabs(double{ours->pixel_values[i]} - ref[i]);
      sum += d;
      worst = std::max(worst, d);
    }
    double mad = sum / static_cast<double>(ours->pixel_values.size());
    EXPECT_LE(mad, OneLevel()) << "mean |diff| " << mad << ", max " << worst;
    // Stronger than the contract, and what holds today: the same bits up to float rounding.
    EXPECT_LE(worst, 1e-6) << "mean |diff| " << mad;
    std::printf("parity %-26s grid %ux%ux%u  mean|diff| %.3g  max|diff| %.3g (one level %.3g)\n",
                name.c_str(), t, h, w, mad, worst, OneLevel());
    ++checked;
  }
  EXPECT_EQ(checked, cases.size());
  fs::remove_all(dir);
}

// libjpeg's DCT scaling (decode at 1/2, 1/4, 1/8 before the bicubic resize) is not what the
// reference does; measure how far it strays on large photos-sized JPEGs.
TEST(JpegDctScalingParitySlow, StaysWithinOneLevel) {
  fs::path dir = test_util::FreshDir("dct");
  fs::create_directories(dir);
  struct {
    const char* name;
    uint32_t width, height;
  } files[] = {{"a.jpg", 4032, 3024}, {"b.jpg", 3000, 4000}, {"c.jpg", 6000, 1500}};
  std::string names;
  for (const auto& f : files) {
    auto file = SynthesizeImageFile(f.width, f.height, 3, f.width, {.format = ImageFormat::kJpeg});
    ASSERT_TRUE(file.ok());
    std::ofstream(dir / f.name, std::ios::binary) << *file;
    names += std::string(" ") + f.name;
  }
  RunCommand(std::string("/usr/bin/python3 ") + kScript + " reference " + dir.string() + names);
  ImagePreprocessConfig config;
  config.jpeg_dct_scaling = true;
  for (const auto& f : files) {
    SCOPED_TRACE(f.name);
    auto bytes = MappedFile::Open((dir / f.name).string());
    auto theirs = MappedFile::Open((dir / (std::string(f.name) + ".f32")).string());
    ASSERT_TRUE(bytes.ok() && theirs.ok());
    auto ours = PreprocessImage(bytes->bytes(), config);
    ASSERT_TRUE(ours.ok()) << ours.status().ToString();
    ASSERT_EQ(theirs->size_bytes(), ours->pixel_values.size() * sizeof(float));
    const auto* ref = reinterpret_cast<const float*>(theirs->bytes().data());
    double sum = 0, worst = 0;
    for (size_t i = 0; i < ours->pixel_values.size(); ++i) {
      double d = std::fabs(double{ours->pixel_values[i]} - ref[i]);
      sum += d;
      worst = std::max(worst, d);
    }
    double mad = sum / static_cast<double>(ours->pixel_values.size());
    std::printf("dct-scaled %s %ux%u: mean|diff| %.3g (%.2f levels), max|diff| %.3g\n", f.name,
                f.width, f.height, mad, mad / OneLevel(), worst);
    EXPECT_LE(mad, OneLevel());
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mmpt::media
