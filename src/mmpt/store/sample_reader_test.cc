// The canonical line reader: what AppendSampleJson writes reads back equal, as views into the
// line; damaged lines are Corrupt naming the problem, never a crash or a read past the line.
#include "mmpt/store/sample_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "mmpt/core/mapped_file.h"
#include "mmpt/corpora/synth.h"
#include "mmpt/ingest/adapter.h"
#include "mmpt/ingest/prepare.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/store_test_util.h"

namespace mmpt::store {
namespace {

// A sample exercising every field and every kind of string the writer escapes.
Sample RichSample() {
  Sample s;
  s.key = "doc-\"7\"\\x";
  s.source = "web";
  s.segments.push_back({"system", 0, false, "plain ascii text", 0});
  s.segments.push_back(
      {"user", 1, false, "tab\there, newline\nthere, cr\r, bell\x07, unit\x1f.", 0});
  s.segments.push_back({"user", 1, true, "", 1});
  s.segments.push_back(
      {"assistant", 2, false, "café, 東京, emoji 🙂, quote \" backslash \\", 0});
  s.segments.push_back({"", 0, true, "", 0});
  s.segments.push_back({"", 0, false, "a document", 0});
  s.media.push_back({"imgs/a b/ü.jpg", "000003.0.jpg", 640, 480, 1});
  s.media.push_back({"", "", 1920, 1080, 24});  // metadata-only, a clip
  return s;
}

std::string LineOf(const Sample& sample) {
  std::string line;
  AppendSampleJson(sample, line);
  line.pop_back();  // the '\n'
  return line;
}

bool Inside(std::string_view part, std::string_view whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

TEST(SampleReaderTest, WhatTheWriterWritesReadsBackEqualAsViewsIntoTheLine) {
  const Sample sample = RichSample();
  const std::string line = LineOf(sample);
  // The line alone in a buffer of exactly its size, as the last line of a mapped shard is:
  // the reader must not look past it (ASan builds check this).
  auto exact = std::make_unique<char[]>(line.size());
  std::memcpy(exact.get(), line.data(), line.size());
  const std::string_view in_place(exact.get(), line.size());
  SampleView view;
  Status status = ReadSampleLine(in_place, view);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(view.ToSample(), sample);
  // Strings without escapes are views into the line; escaped ones are the view's own copies.
  EXPECT_TRUE(Inside(view.source, in_place));
  EXPECT_TRUE(Inside(view.segments[0].text, in_place));
  EXPECT_TRUE(Inside(view.segments[3].role, in_place));
  EXPECT_TRUE(Inside(view.media[0].path, in_place));
  EXPECT_TRUE(Inside(view.media[0].entry, in_place));
  EXPECT_FALSE(Inside(view.key, in_place));
  EXPECT_FALSE(Inside(view.segments[1].text, in_place));
  EXPECT_FALSE(Inside(view.segments[3].text, in_place));

  // Reading another line into another view leaves the first intact; moving keeps it.
  SampleView other;
  ASSERT_TRUE(ReadSampleLine(LineOf(Sample{"k", "s", {{"", 0, false, "x", 0}}, {}}), other).ok());
  EXPECT_EQ(view.ToSample(), sample);
  SampleView moved = std::move(view);
  EXPECT_EQ(moved.ToSample(), sample);
}

TEST(SampleReaderTest, EscapesDecodeLikeJson) {
  SampleView view;
  const std::string line = R"({"key":"\u00e9\u6771\ud83d\ude42\/\b\f","source":"","segments":[)"
                           R"({"text":"a\"b\\c\n\r\t\u0000z"}],"media":[]})";
  Status status = ReadSampleLine(line, view);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(view.key, "\xc3\xa9\xe6\x9d\xb1\xf0\x9f\x99\x82/\b\f");
  EXPECT_EQ(view.segments[0].text, std::string_view("a\"b\\c\n\r\t\0z", 10));
  EXPECT_EQ(view.source, "");
  // Unpaired surrogates and unknown escapes are not JSON text.
  for (const char* bad :
       {R"(\ud83d)", R"(\ude42)", R"(\ud83dx)", R"(\ud83d\u0041)", R"(\x41)", R"(\u12)", "\\"}) {
    std::string damaged =
        std::string(R"({"key":")") + bad + R"(","source":"","segments":[{"text":"t"}],"media":[]})";
    EXPECT_EQ(ReadSampleLine(damaged, view).code(), StatusCode::kCorrupt) << damaged;
  }
}

TEST(SampleReaderTest, ReadingIntoAViewReplacesEverythingAndReusesCapacity) {
  SampleView view;
  const std::string rich = LineOf(RichSample());
  ASSERT_TRUE(ReadSampleLine(rich, view).ok());
  const SegmentView* storage = view.segments.data();
  Sample small;
  small.key = "k";
  small.source = "s";
  small.segments.push_back({"", 0, false, "one", 0});
  const std::string line = LineOf(small);
  ASSERT_TRUE(ReadSampleLine(line, view).ok());
  EXPECT_EQ(view.ToSample(), small);
  EXPECT_EQ(view.segments.data(), storage);  // no reallocation for a smaller sample
}

TEST(SampleReaderTest, OnlyTheWritersLayoutIsAcceptedWhileInputsMayUseAnyJson) {
  // The same record with whitespace and another field order: valid JSON, and a valid input
  // record for prepare (RecordParser), but never a line AppendSampleJson writes.
  const std::string line =
      " { \"media\" : [ ] ,\t\"segments\":[ {\"turn\":2, \"text\" : \"a b\" , \"role\":\"user\"} ],"
      "\"source\":\"s\" , \"key\" : \"k\" } ";
  SampleView view;
  EXPECT_EQ(ReadSampleLine(line, view).code(), StatusCode::kCorrupt);
  ingest::RecordParser parser;
  auto sample = parser.Parse(line, ingest::InputFormat::kCanonical, {"in.jsonl", 1});
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  // What prepare would store for it reads back equal.
  const std::string stored = LineOf(*sample);
  Status status = ReadSampleLine(stored, view);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(view.ToSample(), *sample);
}

TEST(SampleReaderTest, DamagedLinesAreCorruptWithAMessageNamingTheProblem) {
  const std::string ok_media = R"("media":[{"path":"a.jpg","width":2,"height":3}])";
  const std::string ok_segments = R"("segments":[{"turn":1,"text":"t"},{"media":0}])";
  auto record = [&](const std::string& segments, const std::string& media) {
    return "{\"key\":\"k\",\"source\":\"s\"," + segments + "," + media + "}";
  };
  struct Case {
    std::string line;
    std::string message;  // a part of the expected message
  };
  const std::vector<Case> cases = {
      {"", "not a canonical record: the line ends where '{\"key\":' was expected"},
      {"{", "'{\"key\":' expected at column 1, found '{'"},
      {"[1,2]", "'{\"key\":' expected at column 1, found '[1,2]'"},
      {record(ok_segments, ok_media).substr(0, 40), "not a canonical record"},
      {record(ok_segments, ok_media).substr(0, 33) + "}", "not a canonical record"},
      {record(ok_segments, ok_media) + "{}", "bytes after the record at column 120"},
      {record(ok_segments, ok_media) + " 7", "bytes after the record"},
      // Only the writer's layout: its field order, no whitespace, no other fields.
      {"{\"source\":\"s\",\"key\":\"k\"," + ok_segments + "," + ok_media + "}",
       "'{\"key\":' expected at column 1"},
      {"{\"key\":\"k\", \"source\":\"s\"," + ok_segments + "," + ok_media + "}",
       "',\"source\":' expected at column 11, found ', \"source\":\"s\",\"'"},
      {"{\"key\":\"k\",\"source\":\"s\"," + ok_segments + "}", "',\"media\":[' expected"},
      {"{\"key\":\"k\",\"key\":\"k\",\"source\":\"s\"," + ok_segments + "," + ok_media + "}",
       "',\"source\":' expected at column 11"},
      {"{\"key\":\"\",\"source\":\"s\"," + ok_segments + "," + ok_media + "}", "key is empty"},
      {"{\"key\":7,\"source\":\"s\"," + ok_segments + "," + ok_media + "}",
       "key is not a string at column 8"},
      {record(R"("segments":{})", ok_media), "',\"segments\":[' expected"},
      {record(R"("segments":[1])", ok_media), "'{' expected at column 37"},
      {record(R"("segments":[{"text":"t","media":0}])", ok_media), "'}' expected"},
      {record(R"("segments":[{"role":"user"},{"media":0}])", ok_media), "',' expected"},
      {record(R"("segments":[{"text":"t","turn":1},{"media":0}])", ok_media), "'}' expected"},
      {record(R"("segments":[{"turn":1,"role":"user","text":"t"},{"media":0}])", ok_media),
       "'\"media\": or \"text\":' expected"},
      {record(R"("segments":[{"turn":-1,"text":"t"},{"media":0}])", ok_media),
       "segment \"turn\" is not an integer"},
      {record(R"("segments":[{"turn":0,"text":"t"},{"media":0}])", ok_media),
       "segment \"turn\" is not an integer"},
      {record(R"("segments":[{"turn":1.5,"text":"t"},{"media":0}])", ok_media),
       "segment \"turn\" is not an integer"},
      {record(R"("segments":[{"turn":01,"text":"t"},{"media":0}])", ok_media),
       "segment \"turn\" is not an integer"},
      {record(R"("segments":[{"turn":99999999999999999999,"text":"t"},{"media":0}])", ok_media),
       "segment \"turn\" is not an integer"},
      {record(R"("segments":[{"text":"t","color":1},{"media":0}])", ok_media),
       "'}' expected at column 48, found ',\"color\":1}"},
      {record(R"("segments":[{"text":"bad \q escape"},{"media":0}])", ok_media),
       "segment text has an invalid escape sequence"},
      {record(R"("segments":[{"text":"bad \u12G4"},{"media":0}])", ok_media),
       "segment text has an invalid escape sequence"},
      {record(R"("segments":[{"text":"t"},{"media":1}])", ok_media), "refers to media 1 of 1"},
      {record(R"("segments":[{"media":0},{"media":0}])", ok_media), "referred to by 2"},
      {record(R"("segments":[{"text":"t"}])", ok_media), "referred to by 0"},
      {record(R"("segments":[])", R"("media":[])"), "no segments"},
      {record(ok_segments, R"("media":[{"path":"a.jpg","width":0,"height":3}])"),
       "media \"width\" is not an integer in [1, 65536]"},
      {record(ok_segments, R"("media":[{"path":"a.jpg","width":70000,"height":3}])"),
       "media \"width\" is not an integer in [1, 65536]"},
      {record(ok_segments, R"("media":[{"path":"a.jpg","width":2}])"), "',\"height\":' expected"},
      {record(ok_segments, R"("media":[{"path":"a.jpg","frames":0}])"),
       "media \"frames\" is not an integer in [1, 4294967295]"},
      {record(ok_segments, R"("media":[{"path":"b","path":"c"}])"), "'}' expected"},
      {record(ok_segments, R"("media":[{}])"), "neither a path nor a positive size"},
      {record(ok_segments, R"("media":["a.jpg"])"), "'{' expected"},
      {record(ok_segments, R"("media":[{"path":"a\u0000.jpg","url":"x"}])"), "'}' expected"},
      // Invalid UTF-8 and a raw control character inside a string.
      {record(R"("segments":[{"text":"a)"
              "\xff"
              R"(b"},{"media":0}])",
              ok_media),
       "not valid UTF-8"},
      {record(R"("segments":[{"text":"a)"
              "\x01"
              R"(b"},{"media":0}])",
              ok_media),
       "not valid JSON: an unescaped control character in segment text at column 47"},
  };
  SampleView view;
  // The same record read well first, so each failure below is the damage's doing.
  ASSERT_TRUE(ReadSampleLine(record(ok_segments, ok_media), view).ok());
  for (const Case& c : cases) {
    // Followed by bytes that would complete it, which the reader must not look at.
    std::string buffer = c.line + "\"}]}";
    Status status = ReadSampleLine(std::string_view(buffer.data(), c.line.size()), view);
    ASSERT_FALSE(status.ok()) << c.line;
    EXPECT_EQ(status.code(), StatusCode::kCorrupt) << c.line;
    EXPECT_NE(status.message().find(c.message), std::string::npos)
        << c.line << " → " << status.message();
  }
}

// Every truncation and every single-bit flip of a real line: an error or a sample that passes
// validation, and one the input adapter (the lenient parser of canonical records) reads equal.
TEST(SampleReaderTest, EveryTruncationAndBitFlipIsAnErrorOrAValidSample) {
  const std::string line = LineOf(RichSample());
  ingest::RecordParser lenient;
  SampleView view;
  size_t accepted = 0, rejected = 0;
  auto check = [&](std::string_view damaged) {
    Status status = ReadSampleLine(damaged, view);
    if (!status.ok()) {
      EXPECT_EQ(status.code(), StatusCode::kCorrupt);
      ++rejected;
      return;
    }
    ++accepted;
    EXPECT_TRUE(ValidateSample(view).ok());
    auto other = lenient.Parse(damaged, ingest::InputFormat::kCanonical, {"t", 1});
    ASSERT_TRUE(other.ok()) << other.status().ToString() << "\n" << damaged;
    EXPECT_EQ(*other, view.ToSample()) << damaged;
  };
  for (size_t n = 0; n < line.size(); ++n) check(std::string_view(line).substr(0, n));
  for (size_t i = 0; i < line.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string damaged = line;
      damaged[i] = static_cast<char>(damaged[i] ^ (1 << bit));
      check(damaged);
    }
  }
  // Damage to the structure is caught by the parser alone; some (a changed letter in a text)
  // cannot be and is left to verify's checksums.
  EXPECT_GT(rejected, 0u);
  EXPECT_GT(accepted, 0u);
}

// The fuzzer's seeds (tests/fuzz/sample_reader_fuzz/) are lines exactly as the writer writes
// them: each reads, and writing what was read gives the same bytes back.
TEST(SampleReaderTest, VideoAndAudioFieldsRoundTripAndMustAgreeWithMeta) {
  Sample s;
  s.key = "omni";
  s.segments.push_back({"user", 0, true, "", 0});
  s.segments.push_back({"user", 0, true, "", 1});
  s.media.push_back({"v.webm", "000000.0.webm", 176, 144, 30, MediaKind::kVideo, 1000, 30000});
  s.media.push_back({"", "", 0, 0, 1, MediaKind::kAudio, 2500, 0, 0});
  const std::string line = LineOf(s);
  SampleView view;
  ASSERT_TRUE(ReadSampleLine(line, view).ok()) << line;
  EXPECT_EQ(view.ToSample(), s);
  EXPECT_EQ(view.media[0].kind, MediaKind::kVideo);
  EXPECT_EQ(view.media[0].fps_milli, 30000u);
  EXPECT_EQ(view.media[1].duration_ms, 2500u);

  SampleMeta meta{};
  meta.num_media = 2;
  meta.num_segments = 2;
  std::vector<MediaMeta> media = {{.width = 176,
                                   .height = 144,
                                   .frames = 30,
                                   .duration_ms = 1000,
                                   .fps_milli = 30000,
                                   .kind = MediaKind::kVideo},
                                  {.frames = 1, .duration_ms = 2500, .kind = MediaKind::kAudio}};
  EXPECT_TRUE(CheckSampleAgainstMeta(view, meta, media).ok());
  media[1].duration_ms = 2400;
  Status longer = CheckSampleAgainstMeta(view, meta, media);
  EXPECT_EQ(longer.code(), StatusCode::kCorrupt);
  EXPECT_NE(longer.message().find("media 1 lasts 2500 ms"), std::string::npos) << longer.ToString();
  media[1].duration_ms = 2500;
  media[0].kind = MediaKind::kImage;
  Status kind = CheckSampleAgainstMeta(view, meta, media);
  EXPECT_NE(kind.message().find("media 0 is video where .meta says image"), std::string::npos)
      << kind.ToString();
  media[0].kind = MediaKind::kVideo;
  // A part of the video's sound track is an audio record of medium 0, not a medium of its own;
  // after the audio clip it would be the clip's, which has none.
  const MediaMeta part{
      .frames = 32000, .kind = MediaKind::kAudio, .flags = kMediaSoundTrack, .groups = 1};
  media.insert(media.begin() + 1, part);
  EXPECT_TRUE(CheckSampleAgainstMeta(view, meta, media).ok());
  media.erase(media.begin() + 1);
  media.push_back(part);
  Status track = CheckSampleAgainstMeta(view, meta, media);
  EXPECT_NE(track.message().find("media 1 is audio where .meta gives it a sound track"),
            std::string::npos)
      << track.ToString();
  // A kind the writer never writes is damage.
  std::string bad = line;
  bad.replace(bad.find("\"video\""), 7, "\"vidoe\"");
  EXPECT_EQ(ReadSampleLine(bad, view).code(), StatusCode::kCorrupt);
}

// Each kind has only its own fields, in the reader as in the adapters (a fuzzer found the
// reader accepting an image with a duration that the adapter refuses).
TEST(SampleReaderTest, AKindWithAnotherKindsFieldsIsRefused) {
  SampleView view;
  for (const char* media :
       {R"({"path":"v.mp4","kind":"image","width":320,"height":240,"duration_ms":2000})",
        R"({"path":"v.mp4","kind":"video","width":320,"height":240,"sample_rate_hz":16000})",
        R"({"path":"a.wav","kind":"audio","fps_milli":25000})",
        R"({"path":"a.png","width":320})"}) {
    const std::string line =
        std::string(R"({"key":"k","segments":[{"role":"user","media":0}],"media":[)") + media +
        "]}";
    EXPECT_FALSE(ReadSampleLine(line, view).ok()) << line;
  }
}

TEST(SampleReaderTest, FuzzSeedsAreWhatTheWriterWrites) {
  const std::filesystem::path dir = MMPT_SOURCE_DIR "/tests/fuzz/sample_reader_fuzz";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int seeds = 0;
  SampleView view;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto text = ReadFileToString(entry.path().string());
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    Status status = ReadSampleLine(*text, view);
    ASSERT_TRUE(status.ok()) << entry.path() << ": " << status.ToString();
    EXPECT_EQ(LineOf(view.ToSample()), *text) << entry.path();
    ++seeds;
  }
  EXPECT_GE(seeds, 3);
}

// A prepared dataset whose `.jsonl` is damaged: ReadSample names the shard file and line.
TEST(SampleReaderTest, DatasetReadOfADamagedLineNamesTheShardFileAndLine) {
  const std::string corpus = testing::FreshDir("reader_corpus");
  const std::string out = testing::FreshDir("reader_out");
  corpora::SynthOptions synth;
  synth.profile = "tiny";
  synth.out_dir = corpus;
  synth.samples = 6;
  synth.max_side = 64;
  synth.threads = 1;
  auto report = corpora::Synthesize(synth);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  testing::WordTokenizer tokenizer;
  ingest::PrepareOptions options;
  options.inputs = {{report->path, "tiny"}};
  options.out_dir = out;
  options.tokenizer = &tokenizer;
  options.samples_per_shard = 3;
  options.threads = 1;
  options.progress = false;
  ASSERT_TRUE(ingest::Prepare(options).ok());

  const std::string path = out + "/tiny/00001.jsonl";
  std::string bytes = *ReadFileToString(path);
  {
    auto dataset = Dataset::Open(out);
    ASSERT_TRUE(dataset.ok());
    SampleView view;
    for (uint64_t i = 0; i < dataset->num_samples(); ++i) {
      Status status = dataset->Sample(i)->Read(view);
      ASSERT_TRUE(status.ok()) << status.ToString();
      auto line = dataset->Sample(i)->Line();
      EXPECT_TRUE(Inside(view.source, *line));  // zero-copy, the shard's last lines included
    }
    EXPECT_EQ(dataset->Sample(6).status().code(), StatusCode::kOutOfRange);
  }
  // Line 2 of shard 1: its first ':' changed, then an image width changed (valid JSON that
  // disagrees with .meta). The same length keeps the index valid.
  const size_t second = bytes.find('\n') + 1;
  const size_t tokens = bytes.find("\"width\":", second) + 8;
  struct Damage {
    size_t at;
    char byte;
    std::string message;
  };
  for (const Damage& damage : {Damage{bytes.find(':', second), ';', "not a canonical record"},
                               Damage{tokens, bytes[tokens] == '9' ? '8' : '9', ".meta says"}}) {
    std::string damaged = bytes;
    damaged[damage.at] = damage.byte;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
    auto dataset = Dataset::Open(out);
    ASSERT_TRUE(dataset.ok());
    SampleView view;
    EXPECT_TRUE(dataset->Sample(3)->Read(view).ok());
    Status status = dataset->Sample(4)->Read(view);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), StatusCode::kCorrupt);
    EXPECT_NE(status.message().find("tiny/00001.jsonl:2: "), std::string::npos) << status.message();
    EXPECT_NE(status.message().find(damage.message), std::string::npos) << status.message();
  }
}

}  // namespace
}  // namespace mmpt::store
