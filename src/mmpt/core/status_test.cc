#include "mmpt/core/status.h"

#include <gtest/gtest.h>

namespace mmpt {
namespace {

Result<int> ParsePositive(int x) {
  if (x <= 0) return Status::InvalidArgument("sample {}: value {} is not positive", 7, x);
  return x;
}

Result<int> Doubled(int x) {
  MMPT_ASSIGN_OR_RETURN(int v, ParsePositive(x));
  return 2 * v;
}

TEST(StatusTest, OkAndErrorRender) {
  EXPECT_TRUE(Status::OK().ok());
  Status s = Status::Corrupt("{}: bad header", "a.jpg");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_EQ(s.ToString(), "Corrupt: a.jpg: bad header");
  EXPECT_EQ(s.WithContext("shard 3").ToString(), "Corrupt: shard 3: a.jpg: bad header");
}

TEST(StatusTest, ResultPropagatesErrors) {
  auto good = Doubled(4);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 8);
  auto bad = Doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("sample 7"), std::string::npos);
}

}  // namespace
}  // namespace mmpt
