#include "mmpt/cp/image_layout.h"

#include <gtest/gtest.h>

namespace mmpt::cp {
namespace {

TEST(ImageLayoutTest, SpreadsTextEvenlyAroundImages) {
  // Sample 0: 100 tokens, one 40-token image → 30 text tokens before it.
  // Sample 1: 50 tokens, two 10-token images → 30 text tokens in gaps of 10 (+0 remainder).
  const std::vector<uint32_t> lengths = {100, 50};
  const std::vector<SampleImage> images = {{0, 40, 4.0}, {1, 10, 1.0}, {1, 10, 1.0}};
  auto placed = PlaceImages(lengths, images);
  ASSERT_TRUE(placed.ok()) << placed.status().ToString();
  ASSERT_EQ(placed->size(), 3u);
  EXPECT_EQ((*placed)[0].token_start, 30u);
  EXPECT_EQ((*placed)[1].token_start, 110u);
  EXPECT_EQ((*placed)[2].token_start, 130u);
  EXPECT_DOUBLE_EQ((*placed)[0].vision_cost, 4.0);
  // The placement is valid input to the CP stage.
  auto split = SplitThd(lengths, {.cp = 2});
  ASSERT_TRUE(split.ok());
  EXPECT_TRUE(ValidateImages(*split, *placed).ok());
}

TEST(ImageLayoutTest, ImageOnlySampleFillsIt) {
  const std::vector<uint32_t> lengths = {64};
  const std::vector<SampleImage> images = {{0, 64, 1.0}};
  auto placed = PlaceImages(lengths, images);
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ((*placed)[0].token_start, 0u);
}

TEST(ImageLayoutTest, RejectsInconsistentInput) {
  const std::vector<uint32_t> lengths = {10, 10};
  const std::vector<SampleImage> too_big = {{1, 11, 1.0}};
  auto status = PlaceImages(lengths, too_big).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("sample 1"), std::string::npos);
  const std::vector<SampleImage> unordered = {{1, 2, 1.0}, {0, 2, 1.0}};
  EXPECT_FALSE(PlaceImages(lengths, unordered).ok());
  const std::vector<SampleImage> past = {{2, 2, 1.0}};
  EXPECT_FALSE(PlaceImages(lengths, past).ok());
}

}  // namespace
}  // namespace mmpt::cp
