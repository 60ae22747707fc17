// `mmpt synth --profile video|audio|omni`: the files ffmpeg and espeak-ng make are what the
// records say (probed by media::ProbeAv), the same options give the same bytes, the omni mix
// holds every kind, and failures name the command.
#include "mmpt/corpora/av_synth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <sstream>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/corpora/synth.h"
#include "mmpt/media/av_probe.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::corpora {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) : path_(test_util::TempPath("av_synth_" + tag)) {
    fs::remove_all(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

SynthOptions AvOptions(const std::string& profile, const std::string& out, uint64_t samples) {
  SynthOptions o;
  o.profile = profile;
  o.out_dir = out;
  o.samples = samples;
  o.min_duration = 0.5;  // short videos keep the test fast
  o.max_duration = 1.5;
  o.seed = 7;
  o.threads = 2;
  return o;
}

std::vector<json> ReadRecords(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  std::vector<json> records;
  std::istringstream lines(text.ok() ? *text : "");
  for (std::string line; std::getline(lines, line);) records.push_back(json::parse(line));
  return records;
}

media::AvInfo Probe(const std::string& path) {
  auto bytes = ReadFileToString(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto info = media::ProbeAv(std::as_bytes(std::span(*bytes)));
  EXPECT_TRUE(info.ok()) << path << ": " << info.status().ToString();
  return info.ok() ? *info : media::AvInfo{};
}

// Every file under `dir`, by relative path, with its bytes.
std::map<std::string, std::string> Files(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    files[fs::relative(entry.path(), dir).string()] = *ReadFileToString(entry.path().string());
  }
  return files;
}

// Synthesize `options` again into `again` (one thread this time: the thread count must change
// nothing) and expect every file byte for byte as under options.out_dir.
void ExpectSameBytesAgain(SynthOptions options, const std::string& again) {
  const auto files = Files(options.out_dir);
  options.out_dir = again;
  options.threads = 1;
  auto report = Synthesize(options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const auto repeated = Files(again);
  ASSERT_EQ(repeated.size(), files.size());
  for (const auto& [name, bytes] : files) {
    ASSERT_TRUE(repeated.count(name)) << name;
    EXPECT_TRUE(repeated.at(name) == bytes) << name << " differs between two runs";
  }
}

TEST(AvSynthTest, VideosAreWhatTheirRecordsSay) {
  ScratchDir files("video_files"), meta("video_meta");
  SynthOptions options = AvOptions("video", files.str(), 3);  // one of each format
  auto report = Synthesize(options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  options.out_dir = meta.str();
  options.metadata_only = true;
  auto meta_report = Synthesize(options);
  ASSERT_TRUE(meta_report.ok()) << meta_report.status().ToString();
  EXPECT_EQ(report->videos, 3u);
  EXPECT_GT(report->video_bytes, 0u);
  EXPECT_FALSE(fs::exists(meta / "videos"));  // metadata only: no files

  auto coco = ReadCocoCaptions(RealDataPath(kCocoCaptionsFile));
  ASSERT_TRUE(coco.ok()) << coco.status().ToString();
  const std::vector<json> records = ReadRecords(report->path);
  const std::vector<json> described = ReadRecords(meta_report->path);
  ASSERT_EQ(records.size(), 3u);
  ASSERT_EQ(described.size(), 3u);
  const char* kContainer[] = {"mp4", "webm", "avi"};
  const char* kCodec[] = {"h264", "vp9", "mjpeg"};
  double seconds = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const json& r = records[i];
    SCOPED_TRACE(r.dump());
    EXPECT_EQ(r["id"], "v" + std::to_string(i + 1));
    EXPECT_EQ(r["video"],
              std::string("videos/video-v") + std::to_string(i + 1) + "." + kContainer[i]);
    EXPECT_FALSE(r.contains("images"));
    EXPECT_EQ(r["conversations"][0]["value"], "<video>\nDescribe the video.");
    EXPECT_EQ(r["conversations"][1]["from"], "gpt");
    EXPECT_EQ(r["conversations"][1]["value"],
              coco->captions[coco->FirstCaptionOfEachImage()[i]].text);
    const json& want = described[i]["video"];
    EXPECT_EQ(want["width"], coco->images[i].width & ~1u);
    EXPECT_EQ(want["height"], coco->images[i].height & ~1u);
    EXPECT_TRUE(std::set<int>({10, 24, 25, 30}).count(want["fps"].get<int>()));
    const double duration = want["duration"];
    EXPECT_GE(duration, options.min_duration);
    EXPECT_LE(duration, options.max_duration);
    seconds += duration;

    const media::AvInfo info = Probe(files / r["video"].get<std::string>());
    ASSERT_TRUE(info.video.has_value());
    EXPECT_NE(info.container.find(kContainer[i]), std::string::npos) << info.container;
    EXPECT_EQ(info.video->codec, kCodec[i]);
    EXPECT_EQ(info.video->width, want["width"].get<uint32_t>());
    EXPECT_EQ(info.video->height, want["height"].get<uint32_t>());
    EXPECT_NEAR(info.video->fps, want["fps"].get<double>(), 0.01);
    EXPECT_NEAR(info.video->duration_seconds, duration, 1.0 / want["fps"].get<double>() + 0.01);
    EXPECT_FALSE(info.audio.has_value());
  }
  EXPECT_NEAR(report->video_seconds, seconds, 1e-9);
}

TEST(AvSynthTest, SpeechIsTheCaptionSpokenInEveryFormat) {
  ScratchDir files("audio_files"), meta("audio_meta"), again("audio_again");
  SynthOptions options = AvOptions("audio", files.str(), 4);  // wav, flac, mp3, ogg
  auto report = Synthesize(options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ExpectSameBytesAgain(options, again.str());
  options.out_dir = meta.str();
  options.metadata_only = true;
  auto meta_report = Synthesize(options);
  ASSERT_TRUE(meta_report.ok()) << meta_report.status().ToString();
  // The JSONL and the Omni tokenizers to prepare it with; the scratch speech is gone.
  EXPECT_EQ(Files(meta.str()).size(), 3u);
  EXPECT_EQ(meta_report->tokenizer, meta.str() + "/audio.tokenizer.json");
  auto qwen3_omni = text::LoadTokenizer(meta_report->qwen3_omni_tokenizer);
  ASSERT_TRUE(qwen3_omni.ok()) << qwen3_omni.status().ToString();
  EXPECT_EQ((*qwen3_omni)->TokenToId("<|audio_pad|>"), 151675);
  EXPECT_EQ((*qwen3_omni)->TokenToId("<|image_pad|>"), 151655);  // Qwen3's names kept
  auto omni = text::LoadTokenizer(meta_report->tokenizer);
  ASSERT_TRUE(omni.ok()) << omni.status().ToString();
  EXPECT_EQ((*omni)->TokenToId("<|AUDIO|>"), 151646);
  EXPECT_EQ((*omni)->TokenToId("<|IMAGE|>"), 151655);
  EXPECT_FALSE((*omni)->TokenToId("<|image_pad|>").has_value());

  const std::vector<json> records = ReadRecords(report->path);
  const std::vector<json> described = ReadRecords(meta_report->path);
  ASSERT_EQ(records.size(), 4u);
  ASSERT_EQ(described.size(), 4u);
  const char* kExtension[] = {"wav", "flac", "mp3", "ogg"};
  const char* kCodec[] = {"pcm_s16le", "flac", "mp3float", "vorbis"};  // FFmpeg's decoders
  for (size_t i = 0; i < records.size(); ++i) {
    const json& r = records[i];
    SCOPED_TRACE(r.dump());
    EXPECT_EQ(r["id"], "a" + std::to_string(i + 1));
    EXPECT_EQ(r["audio"], "audio/audio-a" + std::to_string(i + 1) + "." + kExtension[i]);
    EXPECT_EQ(r["conversations"][0]["value"], "<audio>\nTranscribe the speech.");
    const json& want = described[i]["audio"];
    EXPECT_EQ(want["sample_rate"], 22050);
    // A caption of a dozen words takes espeak-ng a few seconds.
    const double duration = want["duration"];
    EXPECT_GT(duration, 1.0);
    EXPECT_LT(duration, 15.0);

    const media::AvInfo info = Probe(files / r["audio"].get<std::string>());
    ASSERT_TRUE(info.audio.has_value());
    EXPECT_FALSE(info.video.has_value());
    EXPECT_EQ(info.audio->codec, kCodec[i]);
    EXPECT_EQ(info.audio->sample_rate, 22050u);
    EXPECT_EQ(info.audio->channels, 1u);
    // mp3 and vorbis frames pad the end by a frame or so.
    EXPECT_NEAR(info.audio->duration_seconds, duration, 0.1);
  }
  EXPECT_EQ(report->audio_clips, 4u);
  EXPECT_GT(report->audio_seconds, 4.0);
}

TEST(AvSynthTest, OmniMixesEveryKindAndRepeatsItsBytes) {
  ScratchDir first("omni_1"), second("omni_2");
  // Two of each record: 2 images (jpeg, png), 4 videos (mp4, webm, avi, mp4), 2 speech clips.
  SynthOptions options = AvOptions("omni", first.str(), 8);
  options.image_format = "mix";
  options.min_duration = 0.2;
  options.max_duration = 0.6;
  auto a = Synthesize(options);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  // The JSONL and the tokenizers (Qwen2.5-Omni's and Qwen3-Omni's).
  EXPECT_EQ(Files(first.str()).size(), 1u + 2 + 4 + 2 + 2);
  ExpectSameBytesAgain(options, second.str());

  std::set<std::string> kinds;
  for (const json& r : ReadRecords(a->path)) {
    SCOPED_TRACE(r.dump());
    if (r.contains("images") && r["images"][0].is_string()) {
      kinds.insert("pair");
      EXPECT_EQ(r["id"].get<std::string>().rfind("coco-", 0), 0u);
      EXPECT_EQ(r["conversations"][0]["value"], "<image>\nDescribe the image briefly.");
      EXPECT_TRUE(fs::exists(first / r["images"][0].get<std::string>()));
    } else if (r.contains("video")) {
      kinds.insert("video");
      EXPECT_TRUE(fs::exists(first / r["video"].get<std::string>()));
    } else if (r.contains("audio")) {
      kinds.insert("audio");
      EXPECT_TRUE(fs::exists(first / r["audio"].get<std::string>()));
    } else {
      kinds.insert("document");
      ASSERT_EQ(r["texts"].size(), 3u);
      EXPECT_TRUE(r["texts"][0].is_string());
      EXPECT_TRUE(r["texts"][1].is_null());
      EXPECT_TRUE(r["texts"][2].is_string());
      EXPECT_TRUE(r["images"][0].is_null());
      EXPECT_TRUE(r["images"][2].is_null());
      const std::string video = r["images"][1]["video"];
      EXPECT_TRUE(Probe(first / video).video.has_value()) << video;
    }
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"pair", "video", "audio", "document"}));
}

TEST(AvSynthTest, MetadataOnlyOmniDescribesEveryMedium) {
  ScratchDir out("omni_meta");
  SynthOptions options = AvOptions("omni", out.str(), 4);
  options.metadata_only = true;
  auto report = Synthesize(options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const std::vector<json> records = ReadRecords(report->path);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_TRUE(records[0]["images"][0].contains("width"));
  EXPECT_EQ(records[1]["video"].size(), 4u);  // duration, fps, width, height
  EXPECT_EQ(records[2]["audio"].size(), 2u);  // duration, sample_rate
  EXPECT_TRUE(records[3]["images"][1]["video"].contains("fps"));
}

TEST(AvSynthTest, RefusesWhatItCannotWrite) {
  ScratchDir out("refused");
  SynthOptions options = AvOptions("video", out.str(), 1);
  options.format = ingest::InputFormat::kChat;
  EXPECT_EQ(Synthesize(options).status().code(), StatusCode::kInvalidArgument);
  options = AvOptions("omni", out.str(), 1);
  options.video_format = "mkv";
  EXPECT_NE(Synthesize(options).status().message().find("--video-format"), std::string::npos);
  options = AvOptions("audio", out.str(), 1);
  options.audio_format = "aac";
  EXPECT_NE(Synthesize(options).status().message().find("--audio-format"), std::string::npos);
  options = AvOptions("video", out.str(), 1);
  options.min_duration = 3;
  options.max_duration = 2;
  EXPECT_EQ(Synthesize(options).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteVideo({33, 20, 25, 5, VideoFormat::kMp4}, out / "odd.mp4").code(),
            StatusCode::kInvalidArgument);
}

TEST(AvSynthTest, VideosOfOneShapeDifferBySeed) {
  ScratchDir out("seeded");
  fs::create_directories(out.str());
  std::string bytes[2];
  for (uint64_t seed : {1, 2}) {
    const std::string path = out / ("s" + std::to_string(seed) + ".mp4");
    ASSERT_TRUE(WriteVideo({96, 64, 10, 4, VideoFormat::kMp4, seed}, path).ok());
    bytes[seed - 1] = *ReadFileToString(path);
    const media::AvInfo info = Probe(path);
    ASSERT_TRUE(info.video.has_value());
    EXPECT_EQ(info.video->frames, 4u);
  }
  EXPECT_NE(bytes[0], bytes[1]);
}

TEST(AvSynthTest, AFailingFfmpegIsNamedWithItsError) {
  ScratchDir out("failing");
  const Status status = WriteVideo({64, 48, 10, 3, VideoFormat::kWebm}, out / "no/such/dir/x.webm");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("ffmpeg"), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find("libvpx-vp9"), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find("No such file or directory"), std::string::npos)
      << status.ToString();
}

}  // namespace
}  // namespace mmpt::corpora
