#include "mmpt/ingest/prepare.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mmpt/core/mapped_file.h"
#include "mmpt/corpora/image_synth.h"
#include "mmpt/ingest/merge.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/store_test_util.h"
#include "mmpt/store/verify.h"

namespace mmpt::ingest {
namespace {

using store::testing::FreshDir;
using store::testing::WordTokenizer;

void WriteImage(const std::string& path, uint32_t w, uint32_t h, media::ImageFormat format) {
  corpora::EncodeOptions options;
  options.format = format;
  auto bytes = corpora::SynthesizeImageFile(w, h, 3, w * 31 + h, options);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  ASSERT_TRUE(WriteFileAtomic(path, *bytes).ok());
}

class PrepareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    in_ = FreshDir("prepare_in");
    out_ = FreshDir("prepare_out");
    std::filesystem::create_directories(in_ + "/img");
    WriteImage(in_ + "/img/a.jpg", 64, 48, media::ImageFormat::kJpeg);
    WriteImage(in_ + "/img/b.png", 30, 90, media::ImageFormat::kPng);
    WriteImage(in_ + "/img/thin.png", 2000, 4, media::ImageFormat::kPng);  // ratio 500
    ASSERT_TRUE(WriteFileAtomic(in_ + "/img/corrupt.jpg", "\xff\xd8\xff garbage").ok());
    options_.out_dir = out_;
    options_.tokenizer = &tokenizer_;
    options_.tokenizer_path = "word-tokenizer";
    options_.samples_per_shard = 3;
    options_.threads = 2;
    options_.progress = false;
  }

  // `count` LLaVA records with keys <prefix>0.. and the image `image` (relative to in_).
  static std::vector<std::string> LlavaLines(int count, std::string_view prefix,
                                             std::string_view image) {
    std::vector<std::string> lines;
    for (int i = 0; i < count; ++i) {
      lines.push_back(fmt::format(
          R"({{"id":"{}{}","image":"{}","conversations":[{{"from":"human","value":"<image> {} {}"}}]}})",
          prefix, i, image, prefix, i));
    }
    return lines;
  }

  void WriteInput(const std::string& name, const std::vector<std::string>& lines) {
    std::ofstream file(in_ + "/" + name, std::ios::binary);
    for (const std::string& line : lines) file << line << "\n";
  }

  std::string in_, out_;
  WordTokenizer tokenizer_;
  PrepareOptions options_;
};

TEST_F(PrepareTest, GoodRecordsSurviveEveryKindOfBadOne) {
  WriteInput(
      "chat.jsonl",
      {
          R"({"id":"g1","image":"img/a.jpg","conversations":[{"from":"human","value":"<image> what is this"},{"from":"gpt","value":"a test image"}]})",
          R"({"id":"bad-json","conversations": [)",
          R"({"id":"missing","image":"img/nope.jpg","conversations":[{"from":"human","value":"<image> x"}]})",
          R"({"id":"corrupt","image":"img/corrupt.jpg","conversations":[{"from":"human","value":"<image> x"}]})",
          "{\"id\":\"latin1\",\"conversations\":[{\"from\":\"human\",\"value\":\"caf\xe9\"}]}",
          R"({"id":"thin","image":"img/thin.png","conversations":[{"from":"human","value":"<image> x"}]})",
          R"({"id":"g2","images":["img/b.png","img/a.jpg"],"conversations":[{"from":"human","value":"two <image> and <image>"}]})",
          R"({"id":"g1","conversations":[{"from":"human","value":"same key again"}]})",
          "",
          R"({"id":"meta","image":{"width":1280,"height":720},"conversations":[{"from":"human","value":"<image> sized only"}]})",
          R"({"id":"zero","image":{"width":0,"height":720},"conversations":[{"from":"human","value":"<image>"}]})",
          R"({"caption":"unknown format"})",
          R"({"id":"g3","conversations":[{"from":"human","value":"text only sample here"}]})",
      });
  options_.inputs = {{in_ + "/chat.jsonl", "chat"}};
  auto report = Prepare(options_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->records, 12u);
  EXPECT_EQ(report->samples, 4u);
  EXPECT_EQ(report->skipped, 8u);
  EXPECT_EQ(report->skipped_by_reason["missing image"], 1u);
  EXPECT_EQ(report->skipped_by_reason["corrupt or unsupported image"], 1u);
  EXPECT_EQ(report->skipped_by_reason["malformed JSON or not UTF-8"], 2u);
  EXPECT_EQ(report->skipped_by_reason["duplicate key"], 1u);
  EXPECT_EQ(report->skipped_by_reason["image size rejected"], 1u);
  EXPECT_EQ(report->skipped_by_reason["invalid record"], 2u);
  ASSERT_EQ(report->examples.size(), 5u);
  EXPECT_EQ(report->examples[0].rfind(in_ + "/chat.jsonl:2: ", 0), 0u) << report->examples[0];
  EXPECT_NE(report->Summary().find("duplicate key"), std::string::npos);

  auto dataset = store::Dataset::Open(out_);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  ASSERT_EQ(dataset->num_samples(), 4u);
  std::vector<std::string> keys;
  store::SampleView view;
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(dataset->Sample(i)->Read(view).ok());
    keys.emplace_back(view.key);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"g1", "g2", "meta", "g3"}));
  // g1: its image bytes come back unchanged; probed size recorded.
  auto bytes = dataset->Sample(0)->Media(0);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()),
            *ReadFileToString(in_ + "/img/a.jpg"));
  EXPECT_EQ(dataset->Sample(0)->media()[0].width, 64u);
  EXPECT_EQ(dataset->Sample(0)->media()[0].height, 48u);
  EXPECT_EQ(dataset->Sample(1)->media()[0].height, 90u);
  // Token ids are the sample rendered through the default chat template (qwen_vl), encoded by
  // the tokenizer; an image splits the text, its pads going after its start marker.
  const std::string system = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n";
  auto tokens = dataset->Sample(3)->Tokens();
  ASSERT_TRUE(tokens.ok());
  auto expected = tokenizer_.Encode(system + "<|im_start|>user\ntext only sample here<|im_end|>\n");
  EXPECT_EQ(std::vector<int32_t>(tokens->begin(), tokens->end()), *expected);
  const size_t before_image =
      tokenizer_.Encode(system + "<|im_start|>user\n<|vision_start|>")->size();
  EXPECT_EQ(dataset->Sample(0)->media()[0].text_position, before_image);
  EXPECT_EQ(dataset->Sample(0)->meta().text_tokens,
            before_image + tokenizer_
                               .Encode("<|vision_end|> what is this<|im_end|>\n"
                                       "<|im_start|>assistant\na test image<|im_end|>\n")
                               ->size());
  // The metadata-only sample keeps its size and has no bytes.
  EXPECT_EQ(dataset->Sample(2)->media()[0].width, 1280u);
  EXPECT_TRUE(dataset->Sample(2)->media()[0].flags & store::kMediaWithoutData);
  EXPECT_EQ(dataset->Sample(2)->Media(0)->size(), 0u);
  // 12 records at 3 per shard: 4 shards, the third entirely bad records → not written.
  EXPECT_EQ(dataset->num_shards(), 3u);
}

// Prepare and load apply one decode budget: an image whose header claims more pixels is a bad
// record naming the file, line and option; a raised budget accepts it and the manifest records
// the budget the loader decodes with.
TEST_F(PrepareTest, ImagesAboveTheDecodeBudgetAreRejectedOrRecordedWithTheirBudget) {
  // A PNG header claiming 60000 x 60000 pixels, and no pixel data.
  const std::string bomb(
      "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\xea\x60\x00\x00\xea\x60\x08\x02"
      "\x00\x00\x00\x00\x00\x00\x00",
      33);
  ASSERT_TRUE(WriteFileAtomic(in_ + "/img/bomb.png", bomb).ok());
  WriteInput(
      "in.jsonl",
      {
          R"({"id":"ok","image":"img/a.jpg","conversations":[{"from":"human","value":"<image> x"}]})",
          R"({"id":"bomb","image":"img/bomb.png","conversations":[{"from":"human","value":"<image> x"}]})",
      });
  options_.inputs = {{in_ + "/in.jsonl", "in"}};
  auto report = Prepare(options_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->samples, 1u);
  EXPECT_EQ(report->skipped_by_reason["image above the decode budget"], 1u);
  ASSERT_EQ(report->examples.size(), 1u);
  const std::string& example = report->examples[0];
  EXPECT_EQ(example.rfind(in_ + "/in.jsonl:2: ", 0), 0u) << example;
  EXPECT_NE(example.find("img/bomb.png"), std::string::npos) << example;
  EXPECT_NE(example.find("--max-decode-pixels"), std::string::npos) << example;
  EXPECT_EQ(store::Dataset::Open(out_)->manifest().max_decode_pixels,
            media::kDefaultMaxDecodePixels);

  options_.max_decode_pixels = uint64_t{60000} * 60000;
  report = Prepare(options_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->samples, 2u);
  EXPECT_EQ(store::Dataset::Open(out_)->manifest().max_decode_pixels, uint64_t{60000} * 60000);
}

TEST_F(PrepareTest, FailPolicyStopsAtTheFirstBadRecordAndLeavesNoDataset) {
  WriteInput("in.jsonl",
             {R"({"id":"a","conversations":[{"from":"human","value":"ok"}]})", R"(not json)"});
  options_.inputs = {{in_ + "/in.jsonl", "in"}};
  // A manifest from an earlier run must not survive a failed one.
  ASSERT_TRUE(WriteFileAtomic(out_ + "/mmpt.json", "{}").ok());
  options_.on_error = ErrorPolicy::kFail;
  auto report = Prepare(options_);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(report.status().message().find("in.jsonl:2:"), std::string::npos)
      << report.status().ToString();
  EXPECT_EQ(store::Dataset::Open(out_).status().code(), StatusCode::kNotFound);
}

TEST_F(PrepareTest, PartsCoverDisjointShardsAndEqualOneRun) {
  std::vector<std::string> lines = LlavaLines(10, "s", "img/a.jpg");
  WriteInput("many.jsonl", lines);
  options_.inputs = {{in_ + "/many.jsonl", "many"}};
  options_.num_parts = 2;
  uint64_t samples = 0;
  for (uint32_t part = 0; part < 2; ++part) {
    options_.part = part;
    auto report = Prepare(options_);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    samples += report->samples;
    EXPECT_TRUE(std::filesystem::exists(fmt::format("{}/mmpt.part-{}-of-2.json", out_, part)));
  }
  EXPECT_EQ(samples, 10u);
  EXPECT_FALSE(std::filesystem::exists(out_ + "/mmpt.json"));
}

TEST(PrepareOptionsTest, InputSpecsAndPolicies) {
  auto plain = ParseInputSpec("/data/coco_captions.llava.jsonl");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->source, "coco_captions");
  auto named = ParseInputSpec("web=/x/y.jsonl");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->source, "web");
  EXPECT_EQ(named->path, "/x/y.jsonl");
  EXPECT_FALSE(ParseInputSpec("../evil=/x").ok());
  EXPECT_FALSE(ParseInputSpec("a b=/x").ok());
  EXPECT_FALSE(ParseInputSpec("name=").ok());
  EXPECT_TRUE(ParseErrorPolicy("fail").ok());
  EXPECT_FALSE(ParseErrorPolicy("ignore").ok());
}

}  // namespace
}  // namespace mmpt::ingest

namespace mmpt::ingest {
namespace {

std::vector<std::string> Keys(const store::Dataset& dataset) {
  std::vector<std::string> keys;
  store::SampleView view;
  for (uint64_t i = 0; i < dataset.num_samples(); ++i) {
    MMPT_CHECK(dataset.Sample(i)->Read(view).ok());
    keys.emplace_back(view.key);
  }
  return keys;
}

TEST_F(PrepareTest, MergedPartsEqualTheSingleProcessDataset) {
  std::vector<std::string> lines = LlavaLines(11, "s", "img/b.png");
  WriteInput("m.jsonl", lines);
  WriteInput("t.jsonl", {R"({"id":"t0","conversations":[{"from":"human","value":"only text"}]})"});
  options_.inputs = {{in_ + "/m.jsonl", "m"}, {in_ + "/t.jsonl", "t"}};
  ASSERT_TRUE(Prepare(options_).ok());
  auto single = store::Dataset::Open(out_);
  ASSERT_TRUE(single.ok());

  std::string parts_dir = FreshDir("prepare_parts");
  options_.out_dir = parts_dir;
  options_.num_parts = 3;
  for (uint32_t part = 0; part < 3; ++part) {
    options_.part = part;
    ASSERT_TRUE(Prepare(options_).ok());
  }
  auto merged = MergeDatasets(parts_dir, {parts_dir});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  auto dataset = store::Dataset::Open(parts_dir);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  EXPECT_EQ(Keys(*dataset), Keys(*single));
  EXPECT_EQ(dataset->num_shards(), single->num_shards());
  EXPECT_TRUE(store::VerifyDataset(parts_dir, {2, false}, nullptr).ok());
}

TEST_F(PrepareTest, MergeJoinsSeparateDirectoriesWithoutCopying) {
  WriteInput(
      "a.jsonl",
      {R"({"id":"a","image":"img/a.jpg","conversations":[{"from":"human","value":"<image> a"}]})"});
  WriteInput("b.jsonl", {R"({"id":"b","conversations":[{"from":"human","value":"b"}]})"});
  std::string root = FreshDir("merge_root");
  options_.inputs = {{in_ + "/a.jsonl", "a"}};
  options_.out_dir = root + "/job0";
  ASSERT_TRUE(Prepare(options_).ok());
  options_.inputs = {{in_ + "/b.jsonl", "b"}};
  options_.out_dir = root + "/job1";
  ASSERT_TRUE(Prepare(options_).ok());
  auto merged = MergeDatasets(root + "/all", {root + "/job0", root + "/job1"});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(merged->shards[0].stem, "../job0/a/00000");
  auto dataset = store::Dataset::Open(root + "/all");
  ASSERT_TRUE(dataset.ok());
  EXPECT_EQ(Keys(*dataset), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(store::VerifyDataset(root + "/all", {2, false}, nullptr).ok());
  EXPECT_FALSE(std::filesystem::exists(root + "/all/a"));  // nothing copied

  // Parts counted with different tokenizers cannot be merged.
  std::string text = *ReadFileToString(root + "/job1/mmpt.json");
  text.replace(text.find("\"xxh3\": \"0000000000000000\""), 26, "\"xxh3\": \"0000000000000001\"");
  ASSERT_TRUE(WriteFileAtomic(root + "/job1/mmpt.json", text).ok());
  auto mismatch = MergeDatasets(root + "/all", {root + "/job0", root + "/job1"});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.status().message().find("(0000000000000001)"), std::string::npos)
      << mismatch.status().ToString();  // both parts' settings, named
  // The same part twice is refused.
  EXPECT_FALSE(MergeDatasets(root + "/all", {root + "/job0", root + "/job0"}).ok());
}

}  // namespace
}  // namespace mmpt::ingest

#include <thread>

#include "mmpt/comm/in_process.h"

namespace mmpt::ingest {
namespace {

// Several ranks (threads of one in-process group, as mpirun's processes would be) each prepare
// their part into one directory; rank 0 merges; the result equals a single-process run.
TEST_F(PrepareTest, RanksPrepareTheirPartsAndRankZeroMerges) {
  std::vector<std::string> lines = LlavaLines(14, "r", "img/a.jpg");
  WriteInput("ranks.jsonl", lines);
  options_.inputs = {{in_ + "/ranks.jsonl", "ranks"}};
  options_.threads = 1;
  ASSERT_TRUE(Prepare(options_).ok());
  auto single = store::Dataset::Open(out_);
  ASSERT_TRUE(single.ok());

  std::string ranks_dir = FreshDir("prepare_ranks");
  comm::InProcessGroup group(3);
  std::vector<Status> statuses(3);
  std::vector<std::thread> threads;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    threads.emplace_back([&, rank] {
      PrepareOptions options = options_;
      options.out_dir = ranks_dir;
      statuses[rank] = PrepareOnRanks(options, group.Rank(rank)).status();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& status : statuses) ASSERT_TRUE(status.ok()) << status.ToString();
  auto dataset = store::Dataset::Open(ranks_dir);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  EXPECT_EQ(Keys(*dataset), Keys(*single));
  EXPECT_TRUE(store::VerifyDataset(ranks_dir, {1, false}, nullptr).ok());
  // One manifest: the parts are merged and gone.
  for (uint32_t rank = 0; rank < 3; ++rank) {
    EXPECT_FALSE(std::filesystem::exists(ranks_dir + "/" + PartManifestName(rank, 3)));
  }

  // A bad record on rank 1 under kFail: every rank fails with rank 1's error naming file:line,
  // and no manifest is left — not the earlier run's, not the parts of the ranks that finished.
  lines[4] = R"({"id":"r4","conversations": [)";  // shards of 3: line 5 is in rank 1's shard
  WriteInput("ranks.jsonl", lines);
  threads.clear();
  for (uint32_t rank = 0; rank < 3; ++rank) {
    threads.emplace_back([&, rank] {
      PrepareOptions options = options_;
      options.out_dir = ranks_dir;
      options.on_error = ErrorPolicy::kFail;
      statuses[rank] = PrepareOnRanks(options, group.Rank(rank)).status();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& status : statuses) {
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), StatusCode::kCorrupt);
    EXPECT_EQ(status.message().rfind("rank 1 of 3: ", 0), 0u) << status.ToString();
    EXPECT_NE(status.message().find("ranks.jsonl:5: "), std::string::npos) << status.ToString();
  }
  for (const auto& entry : std::filesystem::directory_iterator(ranks_dir)) {
    EXPECT_NE(entry.path().extension(), ".json") << entry.path();
  }
  EXPECT_FALSE(store::Dataset::Open(ranks_dir).ok());
}

}  // namespace
}  // namespace mmpt::ingest
