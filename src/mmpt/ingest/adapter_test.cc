#include "mmpt/ingest/adapter.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "mmpt/core/mapped_file.h"

namespace mmpt::ingest {
namespace {

Result<store::Sample> ParseLine(std::string_view line, InputFormat format = InputFormat::kAuto,
                                InputFormat* detected = nullptr) {
  RecordParser parser;
  return parser.Parse(line, format, {"in.jsonl", 7}, detected);
}

std::string Describe(const store::Sample& s) {
  std::string out;
  for (const store::Segment& seg : s.segments) {
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
  auto more =
      ParseLine(R"({"image":"a.png","conversations":[{"from":"human","value":"<image><image>"}]})");
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
  auto bad =
      ParseLine(R"({"text_list":["a"],"image_info":[{"image_name":"x","matched_text_index":3}]})");
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
  for (
      const char* line :
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
  for (std::string line :
       {std::string(R"({"conversations": [)"), std::string("not json"),
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
  store::Sample sample;
  sample.key = "k\"1\\\n";
  sample.source = "src";
  sample.media.push_back({"dir/a.jpg", "000001.0.jpg", 640, 480, 1});
  sample.media.push_back({"", "", 32, 16, 3});
  sample.segments.push_back({"user", 0, true, "", 0});
  sample.segments.push_back({"user", 0, false, "Tab\tand \x01 ünïcode ✓", 0});
  sample.segments.push_back({"assistant", 1, true, "", 1});
  sample.segments.push_back({"", 0, false, "plain", 0});
  std::string line;
  store::AppendSampleJson(sample, line);
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  auto back = ParseLine(line, InputFormat::kAuto);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << line;
  EXPECT_EQ(*back, sample);
}

TEST(AdapterTest, CanonicalMediaIndexMustBeUsedExactlyOnce) {
  auto twice = ParseLine(R"({"segments":[{"media":0},{"media":0}],"media":[{"path":"a.jpg"}]})");
  EXPECT_FALSE(twice.ok());
  auto out_of_range = ParseLine(R"({"segments":[{"media":3}],"media":[]})");
  EXPECT_FALSE(out_of_range.ok());
  auto empty = ParseLine(R"({"segments":[]})");
  EXPECT_FALSE(empty.ok());
}

// Describe(), with each media item's kind.
std::string Kinds(const store::Sample& s) {
  std::string out;
  for (const store::Segment& seg : s.segments) {
    if (seg.is_media) out += std::string(store::MediaKindName(s.media[seg.media_index].kind)) + ",";
  }
  return out;
}

TEST(AdapterTest, SynthVideoAndAudioConversationsParse) {
  // The record shapes the synth corpora write (LLaVA-Video / ShareGPT4Video and audio).
  auto video = ParseLine(
      R"({"id":"v1","video":"videos/v1.mp4","conversations":[{"from":"human","value":"<video>\nDescribe the video."},{"from":"gpt","value":"caption"}]})");
  ASSERT_TRUE(video.ok()) << video.status().ToString();
  EXPECT_EQ(Describe(*video), "user:<videos/v1.mp4>|user:\nDescribe the video.|assistant:caption|");
  EXPECT_EQ(Kinds(*video), "video,");
  auto audio = ParseLine(
      R"({"id":"a1","audio":"audio/a1.wav","conversations":[{"from":"human","value":"<audio>\nTranscribe the speech."},{"from":"gpt","value":"caption"}]})");
  ASSERT_TRUE(audio.ok()) << audio.status().ToString();
  EXPECT_EQ(Describe(*audio),
            "user:<audio/a1.wav>|user:\nTranscribe the speech.|assistant:caption|");
  EXPECT_EQ(Kinds(*audio), "audio,");
}

TEST(AdapterTest, MixedMarkersTakeTheirOwnKind) {
  auto s = ParseLine(
      R"({"images":["i.jpg"],"videos":["a.mp4","b.webm"],"audios":["s.flac"],"conversations":[{"from":"human","value":"<video> then <image>, <audio> and <video>"},{"from":"gpt","value":"ok"}]})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Describe(*s),
            "user:<a.mp4>|user: then |user:<i.jpg>|user:, |user:<s.flac>|user: and |user:<b.webm>|"
            "assistant:ok|");
  EXPECT_EQ(Kinds(*s), "video,image,audio,video,");
  // Unmarked media of a kind go first, images before videos before audio.
  auto unmarked = ParseLine(
      R"({"audio":"s.wav","video":"v.mp4","conversations":[{"from":"human","value":"Hi"}]})");
  ASSERT_TRUE(unmarked.ok()) << unmarked.status().ToString();
  EXPECT_EQ(Describe(*unmarked), "user:<v.mp4>|user:<s.wav>|user:Hi|");
}

TEST(AdapterTest, VideoAndAudioMarkerCountsMustMatch) {
  auto fewer = ParseLine(
      R"({"videos":["a.mp4","b.mp4"],"conversations":[{"from":"human","value":"<video> one"}]})");
  ASSERT_FALSE(fewer.ok());
  EXPECT_EQ(fewer.status().message().rfind("in.jsonl:7: ", 0), 0u) << fewer.status().ToString();
  EXPECT_NE(fewer.status().message().find("2 videos but 1 \"<video>\" markers"), std::string::npos)
      << fewer.status().ToString();
  auto more =
      ParseLine(R"({"audio":"a.wav","conversations":[{"from":"human","value":"<audio><audio>"}]})");
  ASSERT_FALSE(more.ok());
  EXPECT_NE(more.status().message().find("more \"<audio>\" markers than the 1 audios"),
            std::string::npos)
      << more.status().ToString();
  // A <video> marker with only images given is no image marker.
  auto wrong =
      ParseLine(R"({"image":"a.jpg","conversations":[{"from":"human","value":"<video>"}]})");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("the 0 videos"), std::string::npos)
      << wrong.status().ToString();
}

TEST(AdapterTest, ChatVideoAndAudioParts) {
  auto s = ParseLine(
      R"({"messages":[{"role":"user","content":[{"type":"video","video":"v.mp4"},{"type":"audio","audio":"s.mp3"},{"type":"text","text":"What?"}]},{"role":"assistant","content":"ok"}]})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Describe(*s), "user:<v.mp4>|user:<s.mp3>|user:What?|assistant:ok|");
  EXPECT_EQ(Kinds(*s), "video,audio,");
  // A part without its item takes the next top-level one of its kind.
  auto top = ParseLine(
      R"({"videos":["v.mp4"],"messages":[{"role":"user","content":[{"type":"video"},{"type":"text","text":"?"}]}]})");
  ASSERT_TRUE(top.ok()) << top.status().ToString();
  EXPECT_EQ(Kinds(*top), "video,");
  auto missing = ParseLine(R"({"messages":[{"role":"user","content":[{"type":"audio"}]}]})");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("audio part but only 0 audios given"),
            std::string::npos)
      << missing.status().ToString();
}

// qwen-vl-utils' video_start / video_end (seconds) cut a clip; canonical records keep it in
// milliseconds and read it back; a clip on an image, or one ending before it starts, is refused.
TEST(AdapterTest, AVideoPartMayCutAClip) {
  auto s = ParseLine(
      R"({"messages":[{"role":"user","content":[{"type":"video","video":"v.mp4","video_start":0.5,"video_end":2.25},{"type":"text","text":"?"}]}]})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->media.size(), 1u);
  EXPECT_EQ(s->media[0].start_ms, 500u);
  EXPECT_EQ(s->media[0].end_ms, 2250u);
  std::string line;
  store::AppendSampleJson(*s, line);
  line.pop_back();
  EXPECT_NE(line.find(R"("start_ms":500,"end_ms":2250)"), std::string::npos) << line;
  auto back = ParseLine(line, InputFormat::kAuto);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->media[0], s->media[0]);
  for (
      const char* bad :
      {R"({"messages":[{"role":"user","content":[{"type":"video","video":"v.mp4","video_start":2,"video_end":1}]}]})",
       R"({"messages":[{"role":"user","content":[{"type":"video","video":"v.mp4","video_start":-1}]}]})",
       R"({"messages":[{"role":"user","content":[{"type":"image","image":{"path":"a.png","video_start":1}}]}]})"}) {
    EXPECT_FALSE(ParseLine(bad).ok()) << bad;
  }
}

TEST(AdapterTest, DocumentsCarryVideoAndAudioObjects) {
  // The omni documents synth writes (OBELICS), and every spelling of a media object.
  auto obelics = ParseLine(
      R"({"id":"d1","texts":["t",null,"t2",null,null],"images":[null,{"video":"videos/x.webm"},null,{"type":"audio","path":"a.ogg"},"p.jpg"]})");
  ASSERT_TRUE(obelics.ok()) << obelics.status().ToString();
  EXPECT_EQ(Describe(*obelics), ":t|:<videos/x.webm>|:t2|:<a.ogg>|:<p.jpg>|");
  EXPECT_EQ(Kinds(*obelics), "video,audio,image,");
  auto mmc4 = ParseLine(
      R"({"text_list":["a","b"],"image_info":[{"audio":"s.wav","matched_text_index":1}]})");
  ASSERT_TRUE(mmc4.ok()) << mmc4.status().ToString();
  EXPECT_EQ(Kinds(*mmc4), "audio,");
  auto conflict = ParseLine(R"({"texts":[null],"images":[{"type":"audio","video":"v.mp4"}]})");
  ASSERT_FALSE(conflict.ok());
  EXPECT_NE(conflict.status().message().find("of type \"audio\" gives a \"video\" path"),
            std::string::npos)
      << conflict.status().ToString();
  auto unknown = ParseLine(R"({"texts":[null],"images":[{"type":"hologram","path":"h"}]})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown media kind 'hologram'"), std::string::npos)
      << unknown.status().ToString();
}

TEST(AdapterTest, MetadataOnlyVideoAndAudio) {
  auto s = ParseLine(
      R"({"video":{"duration":12.5,"fps":29.97,"width":1280,"height":720},"audio":{"duration":3.2,"sample_rate":44100},"conversations":[{"from":"human","value":"<video><audio>"}]})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->media.size(), 2u);
  const store::MediaRef& v = s->media[0];
  EXPECT_TRUE(v.metadata_only());
  EXPECT_EQ(v.kind, store::MediaKind::kVideo);
  EXPECT_EQ(v.width, 1280u);
  EXPECT_EQ(v.height, 720u);
  EXPECT_EQ(v.duration_ms, 12500u);
  EXPECT_EQ(v.fps_milli, 29970u);
  EXPECT_EQ(v.frames, 375u);  // round(12.5 × 29.97)
  const store::MediaRef& a = s->media[1];
  EXPECT_EQ(a.kind, store::MediaKind::kAudio);
  EXPECT_EQ(a.duration_ms, 3200u);
  EXPECT_EQ(a.sample_rate_hz, 44100u);
  EXPECT_EQ(a.frames, 51200u);  // 3.2 s at 16 kHz: its length in samples
  EXPECT_EQ(a.width, 0u);
  // In a document, a metadata-only video sits among the images under its kind's key.
  auto doc = ParseLine(
      R"({"texts":["t",null],"images":[null,{"video":{"duration":2,"fps":25,"width":64,"height":48}}]})");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  ASSERT_EQ(doc->media.size(), 1u);
  EXPECT_EQ(doc->media[0].kind, store::MediaKind::kVideo);
  EXPECT_TRUE(doc->media[0].metadata_only());
  EXPECT_EQ(doc->media[0].frames, 50u);
  auto extra = ParseLine(
      R"({"texts":[null],"images":[{"video":{"duration":2,"fps":25,"width":64,"height":48},"width":64}]})");
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.status().message().find("no other fields"), std::string::npos)
      << extra.status().ToString();
  // Each kind needs its own facts, and only those.
  for (
      const char* line :
      {R"({"video":{"duration":2,"width":64,"height":48},"conversations":[{"from":"human","value":"<video>"}]})",
       R"({"video":{"duration":0,"fps":25,"width":64,"height":48},"conversations":[{"from":"human","value":"<video>"}]})",
       R"({"audio":{"sample_rate":16000},"conversations":[{"from":"human","value":"<audio>"}]})",
       R"({"audio":{"duration":1,"width":5,"height":5},"conversations":[{"from":"human","value":"<audio>"}]})",
       R"({"image":{"width":5,"height":5,"duration":1},"conversations":[{"from":"human","value":"<image>"}]})",
       R"({"audio":{"duration":"long"},"conversations":[{"from":"human","value":"<audio>"}]})"}) {
    auto bad = ParseLine(line);
    ASSERT_FALSE(bad.ok()) << line;
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << line;
    EXPECT_EQ(bad.status().message().rfind("in.jsonl:7: ", 0), 0u) << bad.status().ToString();
  }
}

TEST(AdapterTest, CanonicalRoundTripsVideoAndAudio) {
  store::Sample sample;
  sample.key = "omni";
  sample.media.push_back(
      {"v.mp4", "000000.0.mp4", 320, 240, 50, store::MediaKind::kVideo, 2000, 25000});
  sample.media.push_back({"", "", 0, 0, 24000, store::MediaKind::kAudio, 1500, 0, 16000});
  sample.media.push_back({"", "", 64, 48, 30, store::MediaKind::kVideo, 1000, 30000});
  sample.segments.push_back({"user", 0, true, "", 0});
  sample.segments.push_back({"user", 0, true, "", 1});
  sample.segments.push_back({"user", 0, false, "and", 0});
  sample.segments.push_back({"user", 0, true, "", 2});
  std::string line;
  store::AppendSampleJson(sample, line);
  line.pop_back();
  EXPECT_NE(
      line.find(
          R"("kind":"video","width":320,"height":240,"frames":50,"duration_ms":2000,"fps_milli":25000)"),
      std::string::npos)
      << line;
  auto back = ParseLine(line, InputFormat::kAuto);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << line;
  EXPECT_EQ(*back, sample);
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
      for (const store::MediaRef& media : sample->media) sized_only |= media.metadata_only();
      EXPECT_TRUE(sized_only) << name << " has no metadata-only image";
      // The rest of the name says which format carries the metadata-only item.
      EXPECT_EQ(std::string(InputFormatName(detected)), name.substr(9, name.find('.') - 9)) << name;
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
}  // namespace mmpt::ingest
