#include "mmpt/store/meta.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <functional>
#include <vector>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/temp_dir_test_util.h"

namespace mmpt::store {
namespace {

using test_util::TempPath;

struct Table {
  std::vector<SampleMeta> samples;
  std::vector<MediaMeta> media;
  uint64_t tokens = 0;
};

// Two samples: one with 2 images and 7 tokens, one text-only with 5 tokens.
Table TwoSamples() {
  Table t;
  t.samples.push_back({0, 7, 0, 2, 0, 3});
  t.samples.push_back({7, 5, 2, 0, 0, 1});
  t.media.push_back(MediaMeta{.data_offset = 30,
                              .data_size = 100,
                              .width = 640,
                              .height = 480,
                              .crc32 = 0xdeadbeef,
                              .text_position = 3,
                              .frames = 1,
                              .format = 1});
  t.media.push_back(MediaMeta{
      .width = 320, .height = 200, .text_position = 7, .frames = 1, .flags = kMediaWithoutData});
  t.tokens = 12;
  return t;
}

TEST(MetaTest, EncodeOpenReadsRecordsInPlace) {
  Table t = TwoSamples();
  std::string path = TempPath("roundtrip.meta");
  ASSERT_TRUE(WriteFileAtomic(path, EncodeMeta(t.samples, t.media, t.tokens)).ok());
  auto table = MetaTable::Open(path);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->num_samples(), 2u);
  EXPECT_EQ(table->num_media(), 2u);
  EXPECT_EQ(table->num_tokens(), 12u);
  EXPECT_EQ(table->sample(0).text_tokens, 7u);
  EXPECT_EQ(table->sample(1).token_begin, 7u);
  ASSERT_EQ(table->media_of(0).size(), 2u);
  EXPECT_EQ(table->media_of(0)[0].width, 640u);
  EXPECT_EQ(table->media_of(0)[1].height, 200u);
  EXPECT_EQ(table->media_of(0)[0].crc32, 0xdeadbeefu);
  EXPECT_EQ(table->media_of(0)[0].text_position, 3u);
  EXPECT_EQ(table->media_of(0)[1].kind, MediaKind::kImage);
  EXPECT_TRUE(table->media_of(1).empty());
  EXPECT_EQ(std::filesystem::file_size(path), 64u + 2 * 24 + 2 * 56);
  std::filesystem::remove(path);
}

TEST(MetaTest, EveryTruncationIsCorrupt) {
  Table t = TwoSamples();
  std::string bytes = EncodeMeta(t.samples, t.media, t.tokens);
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto span = std::as_bytes(std::span(bytes.data(), n));
    Status status = ValidateMeta(span, "x.meta");
    ASSERT_FALSE(status.ok()) << "accepted a truncation to " << n << " bytes";
    EXPECT_EQ(status.code(), StatusCode::kCorrupt);
    EXPECT_NE(status.message().find("x.meta"), std::string::npos);
  }
  EXPECT_TRUE(ValidateMeta(std::as_bytes(std::span(bytes.data(), bytes.size())), "x").ok());
}

TEST(MetaTest, InconsistentRangesAreCorruptNamingTheRecord) {
  Table t = TwoSamples();
  t.samples[1].media_begin = 5;  // past the two media records
  std::string bytes = EncodeMeta(t.samples, t.media, t.tokens);
  Status status = ValidateMeta(std::as_bytes(std::span(bytes.data(), bytes.size())), "s.meta");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("sample record 1"), std::string::npos) << status.ToString();

  t = TwoSamples();
  t.media[0].width = 0;
  bytes = EncodeMeta(t.samples, t.media, t.tokens);
  status = ValidateMeta(std::as_bytes(std::span(bytes.data(), bytes.size())), "s.meta");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("media record 0"), std::string::npos) << status.ToString();

  t = TwoSamples();
  bytes = EncodeMeta(t.samples, t.media, t.tokens + 1);  // header claims one token too many
  EXPECT_FALSE(ValidateMeta(std::as_bytes(std::span(bytes.data(), bytes.size())), "s").ok());
}

TEST(MetaTest, TextPositionsOutsideTheSampleOrOutOfOrderAreCorrupt) {
  for (uint32_t first : {8u, 9u}) {  // after the second image's 7, or past the 7 text tokens
    Table t = TwoSamples();
    t.media[0].text_position = first;
    std::string bytes = EncodeMeta(t.samples, t.media, t.tokens);
    Status status = ValidateMeta(std::as_bytes(std::span(bytes.data(), bytes.size())), "p.meta");
    EXPECT_EQ(status.code(), StatusCode::kCorrupt);
    EXPECT_NE(status.message().find("media record 0"), std::string::npos) << status.ToString();
  }
}

// One sample of a video (with data) and a metadata-only audio item.
Table VideoAndAudio() {
  Table t;
  t.samples.push_back({0, 4, 0, 2, kSampleHasMediaWithoutData, 3});
  t.media.push_back(MediaMeta{.data_offset = 40,
                              .data_size = 5000,
                              .width = 320,
                              .height = 240,
                              .text_position = 1,
                              .frames = 50,
                              .duration_ms = 2000,
                              .fps_milli = 25000,
                              .kind = MediaKind::kVideo});
  t.media.push_back(MediaMeta{.text_position = 4,
                              .frames = 1,
                              .duration_ms = 1500,
                              .kind = MediaKind::kAudio,
                              .flags = kMediaWithoutData});
  t.tokens = 4;
  return t;
}

TEST(MetaTest, VideoAndAudioRecordsWithTheirOwnFieldsAreValid) {
  Table t = VideoAndAudio();
  std::string bytes = EncodeMeta(t.samples, t.media, t.tokens);
  Status ok = ValidateMeta(std::as_bytes(std::span(bytes.data(), bytes.size())), "av.meta");
  EXPECT_TRUE(ok.ok()) << ok.ToString();
  // Each change gives a record a field of another kind, or drops one of its own.
  std::vector<void (*)(Table&)> breakages = {
      [](Table& t) { t.media[0].fps_milli = 0; },    // video without a rate
      [](Table& t) { t.media[0].duration_ms = 0; },  // video without a length
      [](Table& t) { t.media[0].sample_rate_hz = 16000; },
      [](Table& t) { t.media[1].width = t.media[1].height = 8; },  // audio with a frame size
      [](Table& t) { t.media[1].duration_ms = 0; },
      [](Table& t) { t.media[1].flags = 0; },  // audio with data needs its rate
      [](Table& t) { t.media[1].kind = static_cast<MediaKind>(7); },
      [](Table& t) {  // an image with a length
        t.media[0].kind = MediaKind::kImage;
        t.media[0].fps_milli = 0;
      }};
  for (size_t i = 0; i < breakages.size(); ++i) {
    Table broken = VideoAndAudio();
    breakages[i](broken);
    bytes = EncodeMeta(broken.samples, broken.media, broken.tokens);
    Status status = ValidateMeta(std::as_bytes(std::span(bytes.data(), bytes.size())), "av.meta");
    EXPECT_EQ(status.code(), StatusCode::kCorrupt) << "breakage " << i;
    EXPECT_NE(status.message().find("av.meta: media record"), std::string::npos)
        << status.ToString();
  }
}

TEST(MetaTest, AnOlderVersionSaysHowToBringItUpToDate) {
  Table t = TwoSamples();
  std::string bytes = EncodeMeta(t.samples, t.media, t.tokens);
  const uint32_t old_version = kOldestMetaVersion - 1;
  std::memcpy(bytes.data() + offsetof(MetaHeader, version), &old_version, sizeof(old_version));
  Status status = ValidateMeta(std::as_bytes(std::span(bytes.data(), bytes.size())), "v.meta");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("v.meta: .meta version 1"), std::string::npos)
      << status.ToString();
  EXPECT_NE(status.message().find("mmpt prepare"), std::string::npos) << status.ToString();
}

TEST(MetaTest, VersionTwoTablesReadAsTheyAre) {
  // Version 3 only gave meaning to bytes version 2 kept zero (a video's groups).
  Table t = TwoSamples();
  std::string bytes = EncodeMeta(t.samples, t.media, t.tokens);
  const uint32_t version = 2;
  std::memcpy(bytes.data() + offsetof(MetaHeader, version), &version, sizeof(version));
  const std::string path = TempPath("v2.meta");
  ASSERT_TRUE(WriteFileAtomic(path, bytes).ok());
  auto table = MetaTable::Open(path);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->num_samples(), t.samples.size());
  ASSERT_EQ(table->num_media(), t.media.size());
  EXPECT_EQ(table->num_tokens(), t.tokens);
  for (size_t i = 0; i < t.samples.size(); ++i) {
    EXPECT_EQ(std::memcmp(&table->sample(i), &t.samples[i], sizeof(SampleMeta)), 0) << i;
  }
  for (size_t j = 0; j < t.media.size(); ++j) {
    EXPECT_EQ(std::memcmp(&table->media(j), &t.media[j], sizeof(MediaMeta)), 0) << j;
  }
  EXPECT_EQ(table->media_of(0)[0].width, 640u);
  EXPECT_EQ(table->media_of(0)[1].flags, kMediaWithoutData);
}

TEST(MetaTest, AudioBeforeVersionFourIsCountedFromItsDuration) {
  // Version 4 records a clip's decoded samples in `frames`; versions 2 and 3 hold 1 there, and
  // read as they were planned: the duration at 16 kHz, rounded up.
  Table t = VideoAndAudio();
  t.media[1].frames = 23999;  // decoded: not what 1500 ms makes
  for (uint32_t version : {3u, 4u}) {
    std::string bytes = EncodeMeta(t.samples, t.media, t.tokens);
    std::memcpy(bytes.data() + offsetof(MetaHeader, version), &version, sizeof(version));
    const std::string path = TempPath("v" + std::to_string(version) + ".meta");
    ASSERT_TRUE(WriteFileAtomic(path, bytes).ok());
    auto table = MetaTable::Open(path);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    EXPECT_EQ(table->media(1).frames, version == 4 ? 23999u : 24000u) << "version " << version;
    EXPECT_EQ(table->media(0).frames, 50u);  // a video's frames as they are
    std::filesystem::remove(path);
  }
}

TEST(MetaTest, AGroupedVideosRecordsFollowOneAnother) {
  // One sample with a video in 3 temporal groups: records share the video's fields and bytes.
  MediaMeta video{};
  video.kind = MediaKind::kVideo;
  video.width = 64;
  video.height = 48;
  video.frames = 12;
  video.duration_ms = 2000;
  video.fps_milli = 6000;
  video.data_offset = 30;
  video.data_size = 100;
  video.groups = 3;
  std::vector<MediaMeta> media(3, video);
  for (uint16_t g = 0; g < 3; ++g) {
    media[g].group = g;
    media[g].text_position = 2 + 5 * g;
  }
  SampleMeta sample{};
  sample.text_tokens = 20;
  sample.num_media = 3;
  sample.num_segments = 2;
  auto check = [&](const std::vector<MediaMeta>& records) {
    std::string bytes = EncodeMeta(std::span(&sample, 1), records, 20);
    return ValidateMeta(std::as_bytes(std::span(bytes.data(), bytes.size())), "g.meta");
  };
  EXPECT_TRUE(check(media).ok());
  EXPECT_EQ(MediumOfRecord(media, 2), 0u);
  std::vector<std::function<void(std::vector<MediaMeta>&)>> breakages = {
      [](auto& m) { m[1].group = 2; },                 // a group skipped
      [](auto& m) { m[2].data_offset = 31; },          // another video's bytes
      [](auto& m) { m[2].groups = 4; },                // another count
      [](auto& m) { m[0].group = 3; },                 // past its count
      [](auto& m) { m[2].group = 0; },                 // cut short: a new video of 3 with 1 record
      [](auto& m) { m[1].kind = MediaKind::kImage; },  // groups on an image
  };
  for (size_t i = 0; i < breakages.size(); ++i) {
    std::vector<MediaMeta> broken = media;
    breakages[i](broken);
    Status status = check(broken);
    EXPECT_EQ(status.code(), StatusCode::kCorrupt) << "breakage " << i;
  }
}

TEST(MetaTest, ASoundTracksPartsInterleaveWithItsVideosGroups) {
  // A video of 2 groups with its sound track in 2 parts, in token order: group 0, part 0,
  // group 1, part 1, all at one text position with the video's bytes.
  MediaMeta video{};
  video.kind = MediaKind::kVideo;
  video.width = 64;
  video.height = 48;
  video.frames = 20;
  video.duration_ms = 2000;
  video.fps_milli = 10000;
  video.data_offset = 30;
  video.data_size = 100;
  video.groups = 2;
  video.text_position = 4;
  MediaMeta part = video;
  part.kind = MediaKind::kAudio;
  part.width = part.height = part.fps_milli = 0;
  part.frames = 32000;
  part.sample_rate_hz = 44100;
  part.flags = kMediaSoundTrack;
  part.groups = 2;
  std::vector<MediaMeta> media = {video, part, video, part};
  media[2].group = 1;
  media[3].group = 1;
  media[3].frames = 100;
  SampleMeta sample{};
  sample.text_tokens = 20;
  sample.num_media = 4;
  sample.num_segments = 2;
  auto check = [&](const std::vector<MediaMeta>& records) {
    std::string bytes = EncodeMeta(std::span(&sample, 1), records, 20);
    return ValidateMeta(std::as_bytes(std::span(bytes.data(), bytes.size())), "s.meta");
  };
  ASSERT_TRUE(check(media).ok()) << check(media).ToString();
  // Part 1 may join part 0 (one clip of the audio encoder).
  std::vector<MediaMeta> joined = media;
  joined[3].flags |= kMediaJoinsPreviousPart;
  EXPECT_TRUE(check(joined).ok()) << check(joined).ToString();
  EXPECT_TRUE(joined[3].joins_previous_part());
  EXPECT_TRUE(media[0].first_of_medium());
  EXPECT_FALSE(media[1].first_of_medium());
  EXPECT_EQ(MediumOfRecord(media, 3), 0u);
  EXPECT_EQ(FirstRecordOfMedium(media, 3), 0u);
  std::vector<std::function<void(std::vector<MediaMeta>&)>> breakages = {
      [](auto& m) { m[3].group = 0; },                         // a part repeated
      [](auto& m) { m[1].data_offset = 31; },                  // another file's bytes
      [](auto& m) { std::swap(m[0], m[1]); },                  // a part before its video
      [](auto& m) { m[3].groups = 3; },                        // another count
      [](auto& m) { m.pop_back(); },                           // cut short
      [](auto& m) { m[1].kind = MediaKind::kVideo; },          // a part that is not audio
      [](auto& m) { m[1].flags |= kMediaJoinsPreviousPart; },  // the first part joins nothing
      [](auto& m) { m[2].flags |= kMediaJoinsPreviousPart; },  // a video group joins no part
  };
  for (size_t i = 0; i < breakages.size(); ++i) {
    std::vector<MediaMeta> broken = media;
    breakages[i](broken);
    sample.num_media = static_cast<uint16_t>(broken.size());
    EXPECT_EQ(check(broken).code(), StatusCode::kCorrupt) << "breakage " << i;
    sample.num_media = 4;
  }
}

TEST(MetaTest, BadMagicIsCorrupt) {
  Table t = TwoSamples();
  std::string bytes = EncodeMeta(t.samples, t.media, t.tokens);
  bytes[0] = 'X';
  Status status = ValidateMeta(std::as_bytes(std::span(bytes.data(), bytes.size())), "m.meta");
  EXPECT_EQ(status.code(), StatusCode::kCorrupt);
  EXPECT_NE(status.message().find("magic"), std::string::npos);
}

}  // namespace
}  // namespace mmpt::store
