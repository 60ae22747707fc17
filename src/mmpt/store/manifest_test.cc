#include "mmpt/store/manifest.h"

#include <gtest/gtest.h>

#include "mmpt/core/mapped_file.h"

namespace mmpt::store {
namespace {

// A manifest `mmpt prepare` wrote (two sources, four shards): the manifest fuzzer's seed.
std::string SeedManifest() {
  auto text = ReadFileToString(MMPT_SOURCE_DIR "/tests/fuzz/manifest_fuzz/two_sources.json");
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

// `text` with the first occurrence of `from` replaced by `to`.
std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(ManifestTest, ParsesAndRoundTrips) {
  auto manifest = ManifestFromJson(SeedManifest(), "m.json");
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->num_samples(), 7u);
  EXPECT_EQ(manifest->sources(), (std::vector<std::string>{"tiny", "meta"}));
  auto again = ManifestFromJson(ManifestToJson(*manifest), "again.json");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ManifestToJson(*again), ManifestToJson(*manifest));
}

TEST(ManifestTest, AudioInVideoIsRecordedOnlyWhenOn) {
  auto manifest = ManifestFromJson(SeedManifest(), "m.json");
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_FALSE(manifest->audio_in_video);
  manifest->audio = "qwen2.5-omni";
  EXPECT_EQ(ManifestToJson(*manifest).find("audio_in_video"), std::string::npos);
  manifest->audio_in_video = true;
  auto again = ManifestFromJson(ManifestToJson(*manifest), "again.json");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->audio_in_video);
  EXPECT_EQ(again->audio, "qwen2.5-omni");
  auto bad = ManifestFromJson(
      Replace(ManifestToJson(*manifest), "\"audio_in_video\": true", "\"audio_in_video\": 1"),
      "m.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("audio_in_video"), std::string::npos);
}

// Found by reasoning about manifest_fuzz, now under -fno-sanitize-recover: a count written as
// a float was cast to uint64 (undefined behaviour for 1e300), a negative one wrapped around.
TEST(ManifestTest, CountsMustBeNonNegativeIntegers) {
  const std::string seed = SeedManifest();
  for (const char* bad : {"1e300", "-2", "2.5", "\"2\"", "18446744073709551616"}) {
    auto manifest = ManifestFromJson(
        Replace(seed, "\"samples\": 2,", std::string("\"samples\": ") + bad + ","), "m.json");
    ASSERT_FALSE(manifest.ok()) << bad;
    EXPECT_EQ(manifest.status().code(), StatusCode::kCorrupt);
    EXPECT_EQ(manifest.status().message().rfind("m.json: shard 0: \"samples\"", 0), 0u)
        << manifest.status().message();
  }
  auto bytes = ManifestFromJson(Replace(seed, "\"bytes\": 687", "\"bytes\": -687"), "m.json");
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().message().rfind("m.json: shard 0 .jsonl: \"bytes\"", 0), 0u)
      << bytes.status().message();
  // 2^32 + 1 must not pass for format version 1.
  auto version = ManifestFromJson(
      Replace(seed, "\"format_version\": 2", "\"format_version\": 4294967297"), "m.json");
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.status().message().find("format_version 4294967297"), std::string::npos);
}

// Every error names the manifest (and the shard and file where there is one).
TEST(ManifestTest, ChecksumErrorsNameTheFileAndShard) {
  const std::string seed = SeedManifest();
  auto shard = ManifestFromJson(
      Replace(seed, "\"xxh3\": \"4af37d921011cb0e\"", "\"xxh3\": \"xyz\""), "m.json");
  ASSERT_FALSE(shard.ok());
  EXPECT_EQ(shard.status().message().rfind("m.json: shard 0 .jsonl: \"xxh3\"", 0), 0u)
      << shard.status().message();
  auto tokenizer =
      ManifestFromJson(Replace(seed, "\"xxh3\": \"08619d9df88b09b1\"", "\"xxh3\": 7"), "m.json");
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_EQ(tokenizer.status().message().rfind("m.json: tokenizer: \"xxh3\"", 0), 0u)
      << tokenizer.status().message();
  for (const std::string& text : {std::string("[]"), std::string("{"),
                                  Replace(seed, "\"path\": \"tiny/00000\"", "\"path\": 3")}) {
    auto bad = ManifestFromJson(text, "m.json");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().message().rfind("m.json: ", 0), 0u) << bad.status().message();
  }
}

}  // namespace
}  // namespace mmpt::store
