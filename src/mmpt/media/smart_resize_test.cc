#include "mmpt/media/smart_resize.h"

#include <gtest/gtest.h>

namespace mmpt::media {
namespace {

TEST(SmartResizeTest, CocoSizeAtQwen2Rule) {
  // 640x480 → 476 is 17 × 28 (480/28 = 17.14), 644 is 23 × 28 (640/28 = 22.86).
  auto size = SmartResize(480, 640);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->height, 476u);
  EXPECT_EQ(size->width, 644u);
  EXPECT_EQ(size->height * size->width / 784, 391u);  // LLM tokens after 2×2 merge
}

TEST(SmartResizeTest, RoundsHalfToEven) {
  // 42/28 = 1.5 → 2 (even); 70/28 = 2.5 → 2 (even), as Python's round() does.
  auto size = SmartResize(42, 70, ResizeRule{28, 1, 1u << 30, 200});
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->height, 56u);
  EXPECT_EQ(size->width, 56u);
}

TEST(SmartResizeTest, LargeImageFitsMaxPixels) {
  ResizeRule rule;
  auto size = SmartResize(4000, 6000, rule);
  ASSERT_TRUE(size.ok());
  EXPECT_LE(uint64_t{size->height} * size->width, rule.max_pixels);
  EXPECT_EQ(size->height % 28, 0u);
  EXPECT_EQ(size->width % 28, 0u);
}

TEST(SmartResizeTest, TinyImageGrowsToMinPixels) {
  ResizeRule rule;
  auto size = SmartResize(10, 10, rule);
  ASSERT_TRUE(size.ok());
  EXPECT_GE(uint64_t{size->height} * size->width, rule.min_pixels);
}

TEST(SmartResizeTest, RejectsZeroAndExtremeAspect) {
  EXPECT_EQ(SmartResize(0, 10).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SmartResize(10, 2001 * 10).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmpt::media
