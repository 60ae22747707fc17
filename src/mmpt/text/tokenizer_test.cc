#include "mmpt/text/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "mmpt/core/data_dir.h"
#include "mmpt/core/scoped_env.h"
#include "mmpt/core/temp_dir_test_util.h"

namespace mmpt::text {
namespace {

// A flag beats the manifest, the manifest $MMPT_TOKENIZER, and that the data directory's default.
TEST(FindTokenizerTest, TakesTheFlagThenTheManifestThenTheEnvironmentThenTheDefault) {
  ScopedEnv env("MMPT_TOKENIZER", "env.json");
  EXPECT_EQ(*FindTokenizer("flag.json", "manifest.json"), "flag.json");
  EXPECT_EQ(*FindTokenizer("", "manifest.json"), "manifest.json");
  EXPECT_EQ(*FindTokenizer(), "env.json");
  ScopedEnv unset("MMPT_TOKENIZER", nullptr);
  auto found = FindTokenizer();
  ASSERT_TRUE(found.ok()) << found.status().ToString() << " (scripts/install-deps.sh installs it)";
  EXPECT_EQ(*found, *DataDir() + "/tokenizer.json");
}

TEST(FindTokenizerTest, NoTokenizerAnywhereNamesEveryWayToGiveOne) {
  const std::string home = test_util::FreshDir("find_tokenizer");
  ScopedEnv env("MMPT_TOKENIZER", nullptr);
  ScopedEnv data("MMPT_HOME", home.c_str());
  auto found = FindTokenizer();
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
  for (const char* way : {"--tokenizer", "manifest", "$MMPT_TOKENIZER", "tokenizer.json"}) {
    EXPECT_NE(found.status().message().find(way), std::string::npos) << found.status().ToString();
  }
  std::filesystem::remove_all(home);
}

}  // namespace
}  // namespace mmpt::text
