#include "mmpt/store/dataset_preset.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/cost/presets.h"
#include "mmpt/store/manifest.h"

namespace mmpt::store {
namespace {

// A dataset directory holding only a manifest that records `vision` as its vision preset.
std::string DatasetWithPreset(const std::string& name, const std::string& vision) {
  const std::string dir = test_util::FreshDir("vision_preset_" + name);
  Manifest manifest;
  manifest.vision = vision;
  EXPECT_TRUE(WriteManifest(dir, manifest).ok());
  return dir;
}

TEST(VisionPresetTest, TheManifestsPresetUnlessAsked) {
  const std::string dir = DatasetWithPreset("recorded", "qwen2-vl");
  auto chosen = DatasetVisionPreset(dir, "");
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(*chosen, "qwen2-vl");
  auto same = DatasetVisionPreset(dir, "qwen2-vl");
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(*same, "qwen2-vl");
  std::filesystem::remove_all(dir);
}

TEST(VisionPresetTest, AConflictingPresetIsAnErrorNamingBoth) {
  const std::string dir = DatasetWithPreset("conflict", "qwen2-vl");
  auto chosen = DatasetVisionPreset(dir, "qwen3-vl");
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(chosen.status().message().find("'qwen3-vl'"), std::string::npos)
      << chosen.status().ToString();
  EXPECT_NE(chosen.status().message().find("'qwen2-vl'"), std::string::npos)
      << chosen.status().ToString();
  std::filesystem::remove_all(dir);
}

TEST(VisionPresetTest, TheDefaultWhenTheManifestNamesNone) {
  const std::string dir = DatasetWithPreset("none", "");
  auto chosen = DatasetVisionPreset(dir, "");
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(*chosen, cost::Defaults::kVision);
  auto asked = DatasetVisionPreset(dir, "qwen3-vl");
  ASSERT_TRUE(asked.ok()) << asked.status().ToString();
  EXPECT_EQ(*asked, "qwen3-vl");
  std::filesystem::remove_all(dir);
}

TEST(VisionPresetTest, NotADatasetIsNotFound) {
  auto chosen = DatasetVisionPreset("/nonexistent/mmpt_dataset", "");
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace mmpt::store

namespace mmpt::store {
namespace {

TEST(AudioPresetTest, TheManifestRecordsItAndCommandsUseIt) {
  const std::string dir = test_util::FreshDir("audio_preset_recorded");
  Manifest manifest;
  manifest.audio = "qwen2-audio";
  ASSERT_TRUE(WriteManifest(dir, manifest).ok());
  auto chosen = DatasetAudioPreset(dir, "");
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(*chosen, "qwen2-audio");
  EXPECT_EQ(RecordedAudioPreset(manifest), "qwen2-audio");
  auto other = DatasetAudioPreset(dir, "whisper-large-v3");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("audio preset 'whisper-large-v3' was asked for"),
            std::string::npos)
      << other.status().ToString();
  // A manifest from before audio presets were recorded: the default.
  manifest.audio.clear();
  ASSERT_TRUE(WriteManifest(dir, manifest).ok());
  EXPECT_EQ(DatasetAudioPreset(dir, "").ValueOrDie(), cost::Defaults::kAudio);
  EXPECT_EQ(RecordedAudioPreset(manifest), cost::Defaults::kAudio);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mmpt::store
