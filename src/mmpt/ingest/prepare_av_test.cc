// Prepare with video and audio: real small files made by the ffmpeg CLI, bad ones dropped by
// the same policy as bad images, the rest kept with their probed facts in `.meta`.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "mmpt/core/mapped_file.h"
#include "mmpt/ingest/prepare.h"
#include "mmpt/media/av_test_util.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/inspect.h"
#include "mmpt/store/store_test_util.h"

namespace mmpt::ingest {
namespace {

using media::AsBytes;
using media::SharedMedia;
using media::Tone;
using store::testing::FreshDir;
using store::testing::WordTokenizer;

class PrepareAvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    in_ = FreshDir("prepare_av_in");
    out_ = FreshDir("prepare_av_out");
    std::filesystem::create_directories(in_ + "/av");
    mp4_ = media::BaseMp4();  // h264 + AAC, 320x240, 25 fps, 50 frames, 2 s
    Write("av/v.mp4", mp4_);
    Write("av/s.wav", SharedMedia().Make("a.wav", Tone(16000, 1, 1.5)));
    Write("av/s.flac", SharedMedia().Make("a.flac", Tone(48000, 2, 1.5)));
    Write("av/cut.mp4", mp4_.substr(0, mp4_.size() / 2));
    Write("av/empty.wav", SharedMedia().Make("z.wav", "-f lavfi -i anullsrc=r=16000:cl=mono -t 0"));
    std::string no_channels = SharedMedia().Make("a.wav", Tone(16000, 1, 1.5));
    no_channels[22] = no_channels[23] = 0;  // WAVE fmt chunk: channel count
    Write("av/no_channels.wav", no_channels);
    std::string unknown = mp4_;
    std::memcpy(unknown.data() + unknown.find("avc1", unknown.find("stsd")), "zzzz", 4);
    Write("av/unknown.mp4", unknown);
    options_.out_dir = out_;
    options_.tokenizer = &tokenizer_;
    options_.tokenizer_path = "word-tokenizer";
    options_.chat_template = "qwen_omni";  // audio markers (qwen_vl has none)
    options_.samples_per_shard = 4;
    options_.threads = 2;
    options_.progress = false;
  }

  void Write(const std::string& name, const std::string& bytes) {
    ASSERT_TRUE(WriteFileAtomic(in_ + "/" + name, bytes).ok()) << name;
  }

  std::string in_, out_, mp4_;
  WordTokenizer tokenizer_;
  PrepareOptions options_;
};

std::string Conversation(std::string_view id, std::string_view kind, std::string_view item) {
  return fmt::format(
      R"({{"id":"{}","{}":{},"conversations":[{{"from":"human","value":"<{}>\nDescribe it."}},{{"from":"gpt","value":"caption"}}]}})",
      id, kind, item, kind);
}

TEST_F(PrepareAvTest, VideoAndAudioAreStoredAndProbedAndBadFilesDropped) {
  std::ofstream(in_ + "/av.jsonl")
      << Conversation("v1", "video", R"("av/v.mp4")") << "\n"               // 1
      << Conversation("a1", "audio", R"("av/s.wav")") << "\n"               // 2
      << Conversation("cut", "video", R"("av/cut.mp4")") << "\n"            // 3
      << Conversation("empty", "audio", R"("av/empty.wav")") << "\n"        // 4
      << Conversation("no-ch", "audio", R"("av/no_channels.wav")") << "\n"  // 5
      << Conversation("codec", "video", R"("av/unknown.mp4")") << "\n"      // 6
      << Conversation("gone", "video", R"("av/nope.webm")") << "\n"         // 7
      << Conversation("novideo", "video", R"("av/s.flac")") << "\n"         // 8
      << R"({"id":"d1","texts":["t",null,"t2",null],"images":[null,{"video":"av/v.mp4"},null,{"type":"audio","path":"av/s.flac"}]})"
      << "\n"  // 9
      << Conversation("meta", "video", R"({"duration":4,"fps":30,"width":640,"height":360})")
      << "\n"                                                             // 10
      << Conversation("meta-a", "audio", R"({"duration":2.5})") << "\n";  // 11
  options_.inputs = {{in_ + "/av.jsonl", "av"}};
  auto report = Prepare(options_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->records, 11u);
  EXPECT_EQ(report->samples, 5u);
  EXPECT_EQ(report->skipped_by_reason["corrupt or unsupported video"], 2u);
  EXPECT_EQ(report->skipped_by_reason["corrupt or unsupported audio"], 2u);
  EXPECT_EQ(report->skipped_by_reason["missing video"], 1u);
  EXPECT_EQ(report->skipped_by_reason["video without a video stream"], 1u);
  // Each error names the file and line, and the item, as a bad image's does.
  ASSERT_GE(report->examples.size(), 4u);
  EXPECT_EQ(report->examples[0].rfind(in_ + "/av.jsonl:3: video 'av/cut.mp4': ", 0), 0u)
      << report->examples[0];
  EXPECT_EQ(report->examples[1].rfind(in_ + "/av.jsonl:4: audio 'av/empty.wav': ", 0), 0u)
      << report->examples[1];
  EXPECT_NE(report->examples[2].find("0 channels"), std::string::npos) << report->examples[2];

  auto dataset = store::Dataset::Open(out_);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  ASSERT_EQ(dataset->num_samples(), 5u);
  store::SampleView view;
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(dataset->Sample(i)->Read(view).ok());
    keys.emplace_back(view.key);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"v1", "a1", "d1", "meta", "meta-a"}));

  // The video: bytes unchanged in the zip under its extension, facts from the probe.
  ASSERT_TRUE(dataset->Sample(0)->Read(view).ok());
  EXPECT_EQ(view.media[0].kind, store::MediaKind::kVideo);
  EXPECT_TRUE(view.media[0].entry.ends_with(".mp4")) << view.media[0].entry;
  auto bytes = dataset->Sample(0)->Media(0);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), mp4_);
  const store::MediaMeta& v = dataset->Sample(0)->media()[0];
  EXPECT_EQ(v.kind, store::MediaKind::kVideo);
  EXPECT_EQ(v.width, 320u);
  EXPECT_EQ(v.height, 240u);
  EXPECT_EQ(v.frames, 50u);
  EXPECT_EQ(v.fps_milli, 25000u);
  EXPECT_NEAR(v.duration_ms, 2000, 50);
  EXPECT_EQ(v.sample_rate_hz, 0u);
  // The audio.
  const store::MediaMeta& a = dataset->Sample(1)->media()[0];
  EXPECT_EQ(a.kind, store::MediaKind::kAudio);
  EXPECT_EQ(a.width, 0u);
  EXPECT_EQ(a.sample_rate_hz, 16000u);
  EXPECT_NEAR(a.duration_ms, 1500, 10);
  EXPECT_GT(a.data_size, 0u);
  // The omni document: a video and a 48 kHz audio item, in document order.
  ASSERT_EQ(dataset->Sample(2)->media().size(), 2u);
  EXPECT_EQ(dataset->Sample(2)->media()[0].kind, store::MediaKind::kVideo);
  EXPECT_EQ(dataset->Sample(2)->media()[1].kind, store::MediaKind::kAudio);
  EXPECT_EQ(dataset->Sample(2)->media()[1].sample_rate_hz, 48000u);
  ASSERT_TRUE(dataset->Sample(2)->Read(view).ok());
  EXPECT_TRUE(view.media[1].entry.ends_with(".flac")) << view.media[1].entry;
  // Metadata-only items keep what the record says, with no bytes.
  const store::MediaMeta& mv = dataset->Sample(3)->media()[0];
  EXPECT_EQ(mv.kind, store::MediaKind::kVideo);
  EXPECT_EQ(mv.frames, 120u);
  EXPECT_EQ(mv.duration_ms, 4000u);
  EXPECT_EQ(mv.fps_milli, 30000u);
  EXPECT_TRUE(mv.flags & store::kMediaWithoutData);
  const store::MediaMeta& ma = dataset->Sample(4)->media()[0];
  EXPECT_EQ(ma.kind, store::MediaKind::kAudio);
  EXPECT_EQ(ma.duration_ms, 2500u);
  EXPECT_TRUE(ma.flags & store::kMediaWithoutData);

  // `mmpt inspect` counts each modality and sums their durations.
  auto inspected = store::Inspect(*dataset);
  ASSERT_TRUE(inspected.ok()) << inspected.status().ToString();
  ASSERT_EQ(inspected->sources.size(), 1u);
  const store::SourceSummary& summary = inspected->sources[0];
  EXPECT_EQ(summary.images.total, 0u);
  EXPECT_EQ(summary.image_tokens_each.count, 0u);
  EXPECT_EQ(summary.videos.total, 3u);  // v1, d1's, and the metadata-only one
  EXPECT_EQ(summary.audios.total, 3u);  // a1, d1's, and the metadata-only one
  EXPECT_EQ(summary.metadata_only_media, 2u);
  EXPECT_EQ(summary.video_ms_each.max, 4000u);
  EXPECT_NEAR(summary.video_ms_each.min, 2000, 50);
  EXPECT_EQ(summary.audio_ms_each.max, 2500u);
  EXPECT_NEAR(summary.audio_ms_each.total, 1500 + 1500 + 2500, 30);
}

TEST_F(PrepareAvTest, FailPolicyStopsAtABadVideoNamingIt) {
  std::ofstream(in_ + "/bad.jsonl") << Conversation("v1", "video", R"("av/v.mp4")") << "\n"
                                    << Conversation("cut", "video", R"("av/cut.mp4")") << "\n";
  options_.inputs = {{in_ + "/bad.jsonl", "bad"}};
  options_.on_error = ErrorPolicy::kFail;
  auto report = Prepare(options_);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kCorrupt) << report.status().ToString();
  EXPECT_NE(report.status().message().find(in_ + "/bad.jsonl:2: video 'av/cut.mp4'"),
            std::string::npos)
      << report.status().ToString();
}

}  // namespace
}  // namespace mmpt::ingest
