#include "mmpt/core/data_dir.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "mmpt/core/scoped_env.h"
#include "mmpt/core/temp_dir_test_util.h"

namespace mmpt {
namespace {

namespace fs = std::filesystem;

// A build tree has its data in <build>/share/mmpt, above this test's binary, linked to the
// source tree's presets.
TEST(DataDirTest, ABuildTreeFindsShareMmptAboveItsBinaries) {
  ScopedEnv home("MMPT_HOME", nullptr);
  auto dir = DataDir();
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_EQ(fs::path(*dir).filename(), "mmpt");
  EXPECT_EQ(fs::path(*dir).parent_path().filename(), "share");
  const std::string build = fs::path(*dir).parent_path().parent_path().string() + "/";
  EXPECT_TRUE(fs::canonical("/proc/self/exe").string().starts_with(build)) << build;
  EXPECT_EQ(fs::canonical(*dir + "/presets"), fs::canonical(MMPT_SOURCE_DIR "/presets"));
  auto presets = PresetDir();
  ASSERT_TRUE(presets.ok());
  EXPECT_EQ(*presets, *dir + "/presets");
}

TEST(DataDirTest, MmptHomeComesFirst) {
  const fs::path home = test_util::FreshDir("data_dir");
  ScopedEnv env("MMPT_HOME", home.c_str());
  auto dir = DataDir();
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_EQ(*dir, home.string());
  EXPECT_EQ(*PresetDir(), home.string() + "/presets");
  fs::remove_all(home);
}

TEST(DataDirTest, AMmptHomeThatIsNoDirectoryIsNotFound) {
  ScopedEnv env("MMPT_HOME", "/nonexistent/mmpt-home");
  auto dir = DataDir();
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), StatusCode::kNotFound);
  EXPECT_NE(dir.status().message().find("$MMPT_HOME=/nonexistent/mmpt-home"), std::string::npos);
  EXPECT_EQ(PresetDir().status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace mmpt
