#include "mmpt/ingest/webdataset.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "mmpt/core/mapped_file.h"
#include "mmpt/corpora/image_synth.h"
#include "mmpt/corpora/synth.h"
#include "mmpt/ingest/prepare.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/sample_view.h"
#include "mmpt/store/store_test_util.h"

namespace mmpt::ingest {
namespace {

using store::testing::FreshDir;
using store::testing::WordTokenizer;

std::span<const std::byte> Bytes(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

std::string Tar(const std::vector<WdsMember>& members, bool gzip = false) {
  auto tar = WriteWebDatasetTar(members, gzip);
  EXPECT_TRUE(tar.ok()) << tar.status().ToString();
  return tar.ok() ? *tar : std::string();
}

// Every sample of `tar`, or the first error.
Result<std::vector<WdsSample>> ReadAll(const std::string& tar, bool with_data = true) {
  MMPT_ASSIGN_OR_RETURN(auto reader, WdsReader::Open(Bytes(tar), "shard-000.tar"));
  std::vector<WdsSample> samples;
  while (true) {
    MMPT_ASSIGN_OR_RETURN(std::optional<WdsSample> sample, reader->Next(with_data));
    if (!sample) return samples;
    samples.push_back(std::move(*sample));
  }
}

std::string Jpeg(uint32_t w, uint32_t h) {
  corpora::EncodeOptions options;
  options.format = media::ImageFormat::kJpeg;
  auto bytes = corpora::SynthesizeImageFile(w, h, 3, w * 31 + h, options);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::string();
}

TEST(WebDatasetTest, KeysAndPaths) {
  EXPECT_EQ(WebDatasetKey("000123.jpg"), "000123");
  EXPECT_EQ(WebDatasetKey("part.1/000123.left.jpg"), "part.1/000123");
  EXPECT_EQ(WebDatasetKey("README"), "");
  EXPECT_EQ(WebDatasetKey("dir/.hidden"), "");
  EXPECT_TRUE(IsWebDatasetPath("a/shard-000.tar"));
  EXPECT_TRUE(IsWebDatasetPath("shard.tar.gz"));
  EXPECT_TRUE(IsWebDatasetPath("shard.tgz"));
  EXPECT_FALSE(IsWebDatasetPath("data.jsonl"));
  EXPECT_FALSE(IsWebDatasetPath("shard.tar.zst"));
  auto format = ParseInputFormat("wds");
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(*format, InputFormat::kWebDataset);
  EXPECT_EQ(InputFormatName(*format), "wds");
  RecordParser parser;  // a tar's samples are not JSON lines
  EXPECT_FALSE(parser.Parse(R"({"id":"k"})", InputFormat::kWebDataset, {"f.jsonl", 1}).ok());
}

TEST(WebDatasetTest, GroupsConsecutiveMembersByKey) {
  const std::string tar = Tar({{"a.jpg", "A", {}},
                               {"a.txt", "cap a", {}},
                               {"README", "no key: passed over", {}},
                               {"d/b.png", "B", {}},
                               {"d/b.json", "{}", {}},
                               {"a.cls", "again: a new sample", {}}});
  for (bool with_data : {true, false}) {
    auto samples = ReadAll(tar, with_data);
    ASSERT_TRUE(samples.ok()) << samples.status().ToString();
    ASSERT_EQ(samples->size(), 3u);
    EXPECT_EQ((*samples)[0].key, "a");
    ASSERT_EQ((*samples)[0].members.size(), 2u);
    EXPECT_EQ((*samples)[0].members[1].name, "a.txt");
    EXPECT_EQ((*samples)[0].members[1].bytes, with_data ? "cap a" : "");
    EXPECT_EQ((*samples)[1].key, "d/b");
    EXPECT_EQ((*samples)[1].members.size(), 2u);
    EXPECT_EQ((*samples)[2].key, "a");
  }
}

TEST(WebDatasetTest, ReadsGzipAndEmptyArchives) {
  const std::vector<WdsMember> members = {{"k.jpg", "J", {}}, {"k.txt", "caption", {}}};
  auto samples = ReadAll(Tar(members, /*gzip=*/true));
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_EQ((*samples)[0].members[1].bytes, "caption");
  auto empty = ReadAll(Tar({}));
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->empty());
}

TEST(WebDatasetTest, TruncatedOrCorruptArchiveNamesTheFile) {
  const std::string tar = Tar({{"k.jpg", std::string(5000, 'x'), {}}, {"k.txt", "c", {}}});
  for (const std::string& bad :
       {tar.substr(0, 2000), std::string("not a tar at all"),
        Tar({{"k.jpg", std::string(5000, 'x'), {}}}, true).substr(0, 60)}) {
    auto samples = ReadAll(bad);
    ASSERT_FALSE(samples.ok());
    EXPECT_EQ(samples.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(samples.status().message().find("shard-000.tar"), std::string::npos)
        << samples.status().ToString();
  }
}

// The sample of `members` (one key), mapped; images land in `images`.
Result<store::Sample> Map(std::vector<WdsMember> members, std::vector<std::string>* images) {
  WdsSample wds{std::string(WebDatasetKey(members.front().name)), std::move(members)};
  return WdsToSample(wds, "shard-000.tar", images);
}

TEST(WebDatasetTest, CaptionFieldOrder) {
  std::vector<std::string> images;
  auto caption_of = [&](std::vector<WdsMember> members) {
    members.insert(members.begin(), WdsMember{"k.jpg", "J", {}});
    auto sample = Map(std::move(members), &images);
    return sample.ok() ? sample->segments.back().text : sample.status().ToString();
  };
  EXPECT_EQ(caption_of({{"k.txt", "from txt\n", {}}, {"k.json", R"({"caption":"json"})", {}}}),
            "from txt");
  EXPECT_EQ(caption_of({{"k.txt", "", {}}, {"k.json", R"({"caption":"json"})", {}}}), "json");
  EXPECT_EQ(caption_of({{"k.json", R"({"txt":"t","text":"second","caption":null})", {}}}),
            "second");
  EXPECT_EQ(caption_of({{"k.json", R"({"url":"u","txt":"third"})", {}}}), "third");
  auto sample = Map({{"k.jpg", "J", {}}, {"k.txt", "a dog", {}}}, &images);
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_EQ(sample->key, "k");
  ASSERT_EQ(sample->segments.size(), 2u);
  EXPECT_TRUE(sample->segments[0].is_media);
  EXPECT_EQ(sample->segments[0].role, "user");
  EXPECT_EQ(sample->segments[1].role, "assistant");
  EXPECT_EQ(sample->segments[1].turn, 1u);
  EXPECT_EQ(sample->media[0].path, "k.jpg");
}

TEST(WebDatasetTest, ImageExtensionsAndErrorsNameFileAndMember) {
  std::vector<std::string> images;
  auto sample = Map({{"k.left.JPG", "L", {}},
                     {"k.right.webp", "R", {}},
                     {"k.png", "P", {}},
                     {"k.jpeg", "E", {}},
                     {"k.gif", "not an image extension here", {}},
                     {"k.txt", "two views", {}}},
                    &images);
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  ASSERT_EQ(sample->media.size(), 4u);
  EXPECT_EQ(sample->media[1].path, "k.right.webp");
  EXPECT_EQ(images, (std::vector<std::string>{"L", "R", "P", "E"}));

  auto no_image = Map({{"000123.txt", "caption", {}}}, &images);
  ASSERT_FALSE(no_image.ok());
  EXPECT_EQ(no_image.status().message().rfind("shard-000.tar:000123.txt: ", 0), 0u)
      << no_image.status().ToString();
  auto no_caption = Map({{"000123.jpg", "J", {}}, {"000123.json", R"({"url":"x"})", {}}}, &images);
  ASSERT_FALSE(no_caption.ok());
  EXPECT_NE(no_caption.status().message().find("no caption"), std::string::npos);
  auto bad_json = Map({{"000123.jpg", "J", {}}, {"000123.json", "{oops", {}}}, &images);
  ASSERT_FALSE(bad_json.ok());
  EXPECT_EQ(bad_json.status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(bad_json.status().message().rfind("shard-000.tar:000123.json: ", 0), 0u)
      << bad_json.status().ToString();
  auto bad_text = Map({{"000123.jpg", "J", {}}, {"000123.txt", "\xff\xfe", {}}}, &images);
  ASSERT_FALSE(bad_text.ok());
  EXPECT_EQ(bad_text.status().code(), StatusCode::kCorrupt);
}

// Sample `i` of `dataset`, or a sample whose key is the error.
store::Sample Get(const store::Dataset& dataset, uint64_t i) {
  store::SampleView view;
  Status status = dataset.Sample(i)->Read(view);
  if (!status.ok()) return store::Sample{status.ToString(), {}, {}, {}};
  return view.ToSample();
}

std::string MediaBytes(const store::Dataset& dataset, uint64_t i) {
  auto bytes = dataset.Sample(i)->Media(0);
  if (!bytes.ok()) return bytes.status().ToString();
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

class WebDatasetPrepareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    in_ = FreshDir("wds_in");
    out_ = FreshDir("wds_out");
    options_.out_dir = out_;
    options_.tokenizer = &tokenizer_;
    options_.tokenizer_path = "word-tokenizer";
    options_.samples_per_shard = 2;
    options_.threads = 2;
    options_.progress = false;
  }

  // Samples `first`, `first` + 1, ... (keys 000000..) with a JPEG and a caption, then `extra`.
  std::string WriteShard(const std::string& name, int count,
                         const std::vector<WdsMember>& extra = {}, bool gzip = false,
                         int first = 0) {
    std::vector<WdsMember> members;
    for (int i = first; i < first + count; ++i) {
      const std::string key = fmt::format("{:06}", i);
      members.push_back({key + ".jpg", Jpeg(40 + i, 30), {}});
      members.push_back({key + ".txt", fmt::format("caption number {}", i), {}});
    }
    members.insert(members.end(), extra.begin(), extra.end());
    const std::string path = in_ + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(path, Tar(members, gzip)).ok());
    return path;
  }

  std::string in_, out_;
  WordTokenizer tokenizer_;
  PrepareOptions options_;
};

TEST_F(WebDatasetPrepareTest, PreparesTarsAndGzipIntoOneSource) {
  options_.inputs = {
      {WriteShard("shard-000.tar", 3), "laion"},
      {WriteShard("shard-001.tar.gz", 0,
                  {{"100.jpg", Jpeg(64, 64), {}}, {"100.json", R"({"caption":"gz"})", {}}},
                  /*gzip=*/true),
       "laion"}};
  auto report = Prepare(options_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->records, 4u);
  EXPECT_EQ(report->samples, 4u) << report->Summary();
  EXPECT_EQ(report->skipped, 0u);
  EXPECT_EQ(report->shards, 2u);  // the two small tars are one group: 4 records, 2 a shard
  auto dataset = store::Dataset::Open(out_);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  ASSERT_EQ(dataset->num_samples(), 4u);
  const store::Sample last = Get(*dataset, 3);
  EXPECT_EQ(last.key, "100");
  ASSERT_EQ(last.media.size(), 1u);
  EXPECT_EQ(last.segments.back().text, "gz");
  EXPECT_EQ(last.media[0].width, 64u);
  EXPECT_EQ(MediaBytes(*dataset, 3), Jpeg(64, 64));
}

TEST_F(WebDatasetPrepareTest, SkipKeepsTheRestAndFailNamesFileAndMember) {
  const std::string shard = WriteShard("shard-000.tar", 3,
                                       {{"000003.jpg", "\xff\xd8 not a jpeg", {}},
                                        {"000003.txt", "broken image", {}},
                                        {"000004.jpg", Jpeg(20, 20), {}},
                                        {"000000.txt", "a duplicate key", {}},
                                        {"000000.jpg", Jpeg(20, 20), {}}});
  options_.inputs = {{shard, "laion"}};
  auto report = Prepare(options_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->records, 6u);
  EXPECT_EQ(report->samples, 3u) << report->Summary();
  EXPECT_EQ(report->skipped, 3u);
  EXPECT_EQ(report->skipped_by_reason["corrupt or unsupported image"], 1u);
  EXPECT_EQ(report->skipped_by_reason["duplicate key"], 1u);
  EXPECT_EQ(report->skipped_by_reason["invalid record"], 1u);  // 000004: no caption
  ASSERT_EQ(report->examples.size(), 3u);
  EXPECT_EQ(report->examples[0].rfind(shard + ":000003.jpg: ", 0), 0u) << report->examples[0];
  EXPECT_EQ(report->examples[1].rfind(shard + ":000004.jpg: ", 0), 0u) << report->examples[1];
  EXPECT_NE(report->examples[2].find("first at " + shard + ":000000.jpg"), std::string::npos)
      << report->examples[2];

  options_.on_error = ErrorPolicy::kFail;
  auto failed = Prepare(options_);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message().rfind(shard + ":000003.jpg: ", 0), 0u)
      << failed.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(out_ + "/mmpt.json"));
}

TEST_F(WebDatasetPrepareTest, TruncatedTarFailsAndLeavesNothingBehind) {
  // The first tar (gzip) fills a shard before the second turns out truncated in an image.
  const std::string good = WriteShard("shard-000.tar.gz", 3, {}, /*gzip=*/true);
  const std::string shard = WriteShard("shard-001.tar", 3, {}, false, 3);
  auto bytes = ReadFileToString(shard);
  ASSERT_TRUE(bytes.ok());
  const size_t last_image = bytes->find(Jpeg(45, 30));  // cut inside sample 000005's image
  ASSERT_NE(last_image, std::string::npos);
  ASSERT_TRUE(WriteFileAtomic(shard, bytes->substr(0, last_image + 100)).ok());
  for (uint64_t group_bytes : {kTarGroupBytes, uint64_t{1}}) {  // one group, then one a tar
    options_.tar_group_bytes = group_bytes;
    options_.inputs = {{good, "laion"}, {shard, "laion"}};
    auto report = Prepare(options_);
    ASSERT_FALSE(report.ok());
    EXPECT_EQ(report.status().code(), StatusCode::kCorrupt);
    EXPECT_EQ(report.status().message().rfind(shard, 0), 0u) << report.status().ToString();
    EXPECT_TRUE(std::filesystem::is_empty(out_)) << group_bytes;
  }
}

TEST_F(WebDatasetPrepareTest, AKeyRepeatedFromAnEarlierGroupIsADuplicate) {
  // 000001 comes back in the third tar: with a group a tar it is found after both are read.
  const std::vector<WdsMember> again = {{"000001.jpg", Jpeg(50, 30), {}},
                                        {"000001.txt", "again", {}}};
  options_.inputs = {{WriteShard("a-0.tar", 2), "laion"},
                     {WriteShard("a-1.tar", 2, {}, false, 2), "laion"},
                     {WriteShard("a-2.tar", 1, again, false, 4), "laion"}};
  std::vector<std::vector<std::string>> keys;
  for (uint64_t group_bytes : {kTarGroupBytes, uint64_t{1}}) {
    options_.tar_group_bytes = group_bytes;
    auto report = Prepare(options_);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_EQ(report->records, 6u);
    EXPECT_EQ(report->samples, 5u) << report->Summary();
    EXPECT_EQ(report->skipped_by_reason["duplicate key"], 1u);
    ASSERT_EQ(report->examples.size(), 1u);
    EXPECT_NE(report->examples[0].find("first at " + in_ + "/a-0.tar:000001.jpg"),
              std::string::npos)
        << report->examples[0];
    EXPECT_EQ(report->shards, 3u);  // 2 records each: in one group, or one tar each
    auto dataset = store::Dataset::Open(out_);
    ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
    keys.emplace_back();
    for (uint64_t i = 0; i < dataset->num_samples(); ++i)
      keys.back().push_back(Get(*dataset, i).key);
  }
  EXPECT_EQ(keys[0], (std::vector<std::string>{"000000", "000001", "000002", "000003", "000004"}));
  EXPECT_EQ(keys[0], keys[1]);
}

TEST_F(WebDatasetPrepareTest, SynthWdsPreparesLikeItsJsonl) {
  corpora::SynthOptions synth;
  synth.profile = "tiny";
  synth.samples = 5;
  synth.max_side = 96;
  synth.out_dir = in_;
  synth.format = InputFormat::kWebDataset;
  auto tar = corpora::Synthesize(synth);
  ASSERT_TRUE(tar.ok()) << tar.status().ToString();
  EXPECT_EQ(tar->path, in_ + "/tiny.tar");
  synth.format = InputFormat::kLlava;
  auto jsonl = corpora::Synthesize(synth);
  ASSERT_TRUE(jsonl.ok()) << jsonl.status().ToString();
  options_.inputs = {{tar->path, "wds"}, {jsonl->path, "llava"}};
  auto report = Prepare(options_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->samples, 10u) << report->Summary();
  auto dataset = store::Dataset::Open(out_);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  for (uint64_t i = 0; i < 5; ++i) {  // the same keys, images and captions
    const store::Sample wds = Get(*dataset, i);
    const store::Sample llava = Get(*dataset, 5 + i);
    EXPECT_EQ(wds.key, llava.key);
    ASSERT_EQ(wds.media.size(), 1u) << wds.key;
    ASSERT_EQ(llava.media.size(), 1u) << llava.key;
    EXPECT_EQ(wds.media[0].width, llava.media[0].width);
    EXPECT_EQ(wds.segments.back().text, llava.segments.back().text);
    EXPECT_EQ(MediaBytes(*dataset, i), MediaBytes(*dataset, 5 + i));
  }
  synth.format = InputFormat::kWebDataset;
  synth.metadata_only = true;
  EXPECT_FALSE(corpora::Synthesize(synth).ok());
}

}  // namespace
}  // namespace mmpt::ingest
