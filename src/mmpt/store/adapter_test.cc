#include "mmpt/store/adapter.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "mmpt/core/mapped_file.h"

namespace mmpt::store {
namespace {

Result<Sample> ParseLine(std::string_view line, InputFormat format = InputFormat::kAuto,
                         InputFormat* detected = nullptr) {
  RecordParser parser;
  return parser.Parse(line, format, {"in.jsonl", 7}, detected);
}

std::string Describe(const Sample& s) {
  std::string out;
  for (const Segment& seg : s.segments) {
    out += seg.role + ":";
    out += seg.is_media ? "<" + s.media[seg.media_index].path + ">" : seg.text;
    out += "|";
  }
  return out;
}

TEST(AdapterTest, LlavaSplitsAtImageMarkers) {
  InputFormat detected{};
  auto s = ParseLine(
      R"({"id":"a1","image":"coco/1.jpg","conversations":[{"from":"human","value":"<image>\nWhat is it?"},{"from":"gpt","value":"A cat."}]})",
      InputFormat::kAuto, &detected);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(detected, InputFormat::kLlava);
  EXPECT_EQ(s->key, "a1");
  EXPECT_EQ(Describe(*s), "user:<coco/1.jpg>|user:\nWhat is it?|assistant:A cat.|");
}

TEST(AdapterTest, LlavaWithoutMarkersPutsImagesFirst) {
  auto s = ParseLine(
      R"({"id":7,"images":["a.png","b.png"],"conversations":[{"from":"human","value":"Compare."},{"from":"gpt","value":"Same."}]})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->key, "7");
  EXPECT_EQ(Describe(*s), "user:<a.png>|user:<b.png>|user:Compare.|assistant:Same.|");
}

TEST(AdapterTest, LlavaMarkerCountMismatchIsAnErrorWithFileAndLine) {
  auto s = ParseLine(
      R"({"images":["a.png","b.png"],"conversations":[{"from":"human","value":"<image> one"}]})");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("in.jsonl:7: "), std::string::npos);
  EXPECT_NE(s.status().message().find("2 images but 1"), std::string::npos)
      << s.status().ToString();
  auto more = ParseLine(
      R"({"image":"a.png","conversations":[{"from":"human","value":"<image><image>"}]})");
  ASSERT_FALSE(more.ok());
  EXPECT_NE(more.status().message().find("more \"<image>\" markers"), std::string::npos);
}

TEST(AdapterTest, Mmc4PlacesImagesBeforeTheirMatchedSentence) {
  auto s = ParseLine(
      R"({"url":"http://x","text_list":["First.","Second.","Third."],"image_info":[{"image_name":"b.jpg","matched_text_index":2},{"image_name":"a.jpg","matched_text_index":0,"raw_url":"http://a"}]})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // Sentences between images read as one text, joined with a space as OpenFlamingo does.
  EXPECT_EQ(Describe(*s), ":<a.jpg>|:First. Second.|:<b.jpg>|:Third.|");
  EXPECT_EQ(s->key, "in.jsonl:7");
  auto bad = ParseLine(R"({"text_list":["a"],"image_info":[{"image_name":"x","matched_text_index":3}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("past text_list"), std::string::npos);
}

TEST(AdapterTest, ObelicsParallelListsWithNulls) {
  auto s = ParseLine(
      R"({"texts":["Intro",null,"Outro"],"images":[null,{"url":"i.webp","width":640,"height":480},null]})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Describe(*s), ":Intro|:<i.webp>|:Outro|");
  EXPECT_EQ(s->media[0].width, 640u);
  auto both = ParseLine(R"({"texts":["a"],"images":["b"]})");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("exactly one"), std::string::npos);
  auto lengths = ParseLine(R"({"texts":["a",null],"images":[null]})");
  EXPECT_FALSE(lengths.ok());
}

TEST(AdapterTest, ChatMessagesWithContentParts) {
  auto s = ParseLine(
      R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"image","image":"p.png"},{"type":"text","text":"Describe."}]},{"role":"assistant","content":[{"type":"text","text":"A dog."}]}]})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Describe(*s), "system:Be brief.|user:<p.png>|user:Describe.|assistant:A dog.|");
  // Image parts without a source take the top-level "images" in order.
  auto top = ParseLine(
      R"({"images":["q.jpg"],"messages":[{"role":"user","content":[{"type":"text","text":"Look"},{"type":"image"}]}]})");
  ASSERT_TRUE(top.ok()) << top.status().ToString();
  EXPECT_EQ(Describe(*top), "user:Look|user:<q.jpg>|");
  auto missing = ParseLine(R"({"messages":[{"role":"user","content":[{"type":"image"}]}]})");
  EXPECT_FALSE(missing.ok());
}

TEST(AdapterTest, MetadataOnlyImagesCarrySizes) {
  auto s = ParseLine(
      R"({"conversations":[{"from":"human","value":"<image> hi"}],"image":{"width":1024,"height":768}})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->media.size(), 1u);
  EXPECT_TRUE(s->media[0].metadata_only());
  EXPECT_EQ(s->media[0].width, 1024u);
  EXPECT_EQ(s->media[0].height, 768u);
}

TEST(AdapterTest, ZeroAndAbsurdSizesAreRejected) {
  for (const char* line :
       {R"({"conversations":[{"from":"human","value":"<image>"}],"image":{"width":0,"height":5}})",
        R"({"conversations":[{"from":"human","value":"<image>"}],"image":{"width":5,"height":99999999}})",
        R"({"conversations":[{"from":"human","value":"<image>"}],"image":{"width":-3,"height":5}})",
        R"({"conversations":[{"from":"human","value":"<image>"}],"image":{"width":5}})",
        R"({"conversations":[{"from":"human","value":"<image>"}],"image":{}})"}) {
    auto s = ParseLine(line);
    EXPECT_FALSE(s.ok()) << line;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << line;
  }
}

TEST(AdapterTest, MalformedJsonAndNonUtf8AreCorruptNamingTheLine) {
  for (std::string line : {std::string(R"({"conversations": [)"), std::string("not json"),
                           std::string("{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}")}) {
    auto s = ParseLine(line);
    ASSERT_FALSE(s.ok()) << line;
    EXPECT_EQ(s.status().code(), StatusCode::kCorrupt) << s.status().ToString();
    EXPECT_EQ(s.status().message().rfind("in.jsonl:7: ", 0), 0u) << s.status().ToString();
  }
}

TEST(AdapterTest, UnknownFormatAndWrongTypes) {
  auto unknown = ParseLine(R"({"caption":"x"})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown record format"), std::string::npos);
  EXPECT_FALSE(ParseLine("[1,2]").ok());
  EXPECT_FALSE(ParseLine(R"({"conversations":"x"})").ok());
  EXPECT_FALSE(ParseLine(R"({"conversations":[{"from":1,"value":"x"}]})").ok());
  EXPECT_FALSE(ParseLine(R"({"conversations":[]})").ok());
  // Forcing a format that does not match the record is an error, not a guess.
  EXPECT_FALSE(ParseLine(R"({"texts":["a"],"images":[null]})", InputFormat::kMmc4).ok());
  EXPECT_TRUE(ParseInputFormat("obelics").ok());
  EXPECT_FALSE(ParseInputFormat("webdataset").ok());
}

TEST(AdapterTest, CanonicalRoundTripsThroughItsJsonLine) {
  Sample sample;
  sample.key = "k\"1\\\n";
  sample.source = "src";
  sample.media.push_back({"dir/a.jpg", "000001.0.jpg", 640, 480, 1});
  sample.media.push_back({"", "", 32, 16, 3});
  sample.segments.push_back({"user", 0, true, "", 0});
  sample.segments.push_back({"user", 0, false, "Tab\tand \x01 ünïcode ✓", 0});
  sample.segments.push_back({"assistant", 1, true, "", 1});
  sample.segments.push_back({"", 0, false, "plain", 0});
  std::string line;
  AppendSampleJson(sample, line);
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  auto back = ParseLine(line, InputFormat::kAuto);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << line;
  EXPECT_EQ(*back, sample);
}

TEST(AdapterTest, CanonicalMediaIndexMustBeUsedExactlyOnce) {
  auto twice = ParseLine(
      R"({"segments":[{"media":0},{"media":0}],"media":[{"path":"a.jpg"}]})");
  EXPECT_FALSE(twice.ok());
  auto out_of_range = ParseLine(R"({"segments":[{"media":3}],"media":[]})");
  EXPECT_FALSE(out_of_range.ok());
  auto empty = ParseLine(R"({"segments":[]})");
  EXPECT_FALSE(empty.ok());
}

// The adapter fuzzer's seeds (tests/fuzz/adapter_fuzz/<format>_*.json) reach every adapter's
// success path: each seed parses, is detected as the format its name starts with, and every
// format — plus metadata-only media in each of them — has at least one seed.
TEST(AdapterTest, FuzzSeedsReachEveryFormat) {
  const std::filesystem::path dir = MMPT_SOURCE_DIR "/tests/fuzz/adapter_fuzz";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::map<std::string, int> parsed;  // format name (or "metadata") → seeds that parse
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    auto text = ReadFileToString(entry.path().string());
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    InputFormat detected{};
    auto sample = ParseLine(*text, InputFormat::kAuto, &detected);
    ASSERT_TRUE(sample.ok()) << name << ": " << sample.status().ToString();
    const std::string prefix = name.substr(0, name.find('_'));
    if (prefix == "metadata") {
      bool sized_only = false;
      for (const MediaRef& media : sample->media) sized_only |= media.metadata_only();
      EXPECT_TRUE(sized_only) << name << " has no metadata-only image";
      // The rest of the name says which format carries the metadata-only item.
      EXPECT_EQ(std::string(InputFormatName(detected)), name.substr(9, name.find('.') - 9))
          << name;
    } else {
      EXPECT_EQ(std::string(InputFormatName(detected)), prefix) << name;
    }
    ++parsed[prefix];
  }
  for (const char* format : {"canonical", "llava", "mmc4", "obelics", "chat", "metadata"}) {
    EXPECT_GT(parsed[format], 0) << "no seed for " << format << " in " << dir;
  }
}

}  // namespace
}  // namespace mmpt::store
