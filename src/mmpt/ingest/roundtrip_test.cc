// Real data through synth → prepare → verify → random reads, and damage that verify must name.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "mmpt/core/mapped_file.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/corpora/synth.h"
#include "mmpt/ingest/prepare.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/inspect.h"
#include "mmpt/store/store_test_util.h"
#include "mmpt/store/verify.h"

namespace mmpt::ingest {
namespace {

using store::testing::FreshDir;
using store::testing::WordTokenizer;

// Input records by key, as the adapter reads them straight from the synthesized JSONL.
std::map<std::string, store::Sample> ReadInputs(const std::string& jsonl) {
  std::map<std::string, store::Sample> out;
  std::string text = *ReadFileToString(jsonl);
  RecordParser parser;
  size_t pos = 0, line = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    auto sample = parser.Parse(std::string_view(text).substr(pos, end - pos), InputFormat::kAuto,
                               {jsonl, ++line});
    EXPECT_TRUE(sample.ok()) << sample.status().ToString();
    if (sample.ok()) out[sample->key] = *sample;
    pos = end + 1;
  }
  return out;
}

class RoundTripTest : public ::testing::TestWithParam<InputFormat> {};

TEST_P(RoundTripTest, CocoAndMmc4ThroughSynthPrepareVerifyAndRandomReads) {
  const std::string coco_path = corpora::RealDataPath(corpora::kCocoCaptionsFile);
  ASSERT_TRUE(std::filesystem::exists(coco_path)) << "real data missing: " << coco_path;
  std::string corpus = FreshDir(fmt::format("rt_corpus_{}", InputFormatName(GetParam())));
  std::string out = FreshDir(fmt::format("rt_out_{}", InputFormatName(GetParam())));
  corpora::SynthOptions synth;
  synth.out_dir = corpus;
  synth.format = GetParam();
  synth.samples = 24;
  synth.threads = 2;
  synth.image_format = "mix";
  synth.profile = "coco";
  auto coco = corpora::Synthesize(synth);
  ASSERT_TRUE(coco.ok()) << coco.status().ToString();
  EXPECT_FALSE(coco->sizes_drawn);
  synth.profile = "mmc4";
  synth.samples = 5;
  auto mmc4 = corpora::Synthesize(synth);
  ASSERT_TRUE(mmc4.ok()) << mmc4.status().ToString();
  EXPECT_TRUE(mmc4->sizes_drawn);

  WordTokenizer tokenizer;
  PrepareOptions options;
  options.inputs = {{coco->path, "coco"}, {mmc4->path, "mmc4"}};
  options.out_dir = out;
  options.tokenizer = &tokenizer;
  options.samples_per_shard = 10;
  options.threads = 2;
  options.progress = false;
  auto report = Prepare(options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->skipped, 0u) << report->Summary();
  EXPECT_EQ(report->samples, 29u);

  store::VerifyReport verified;
  Status status = store::VerifyDataset(out, {2, false}, &verified);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(verified.samples, 29u);

  auto inputs = ReadInputs(coco->path);
  auto more = ReadInputs(mmc4->path);
  inputs.insert(more.begin(), more.end());
  auto dataset = store::Dataset::Open(out);
  ASSERT_TRUE(dataset.ok());
  std::mt19937_64 rng(7);
  store::SampleView view;
  for (int read = 0; read < 200; ++read) {
    uint64_t i = rng() % dataset->num_samples();
    Status status = dataset->Sample(i)->Read(view);
    ASSERT_TRUE(status.ok()) << status.ToString();
    const store::Sample& input = inputs.at(std::string(view.key));
    ASSERT_EQ(view.segments.size(), input.segments.size());
    for (size_t s = 0; s < input.segments.size(); ++s) {
      EXPECT_EQ(view.segments[s].text, input.segments[s].text);
      EXPECT_EQ(view.segments[s].role, input.segments[s].role);
      EXPECT_EQ(view.segments[s].is_media, input.segments[s].is_media);
    }
    ASSERT_EQ(view.media.size(), input.media.size());
    for (size_t k = 0; k < input.media.size(); ++k) {
      auto bytes = dataset->Sample(i)->Media(k);
      ASSERT_TRUE(bytes.ok());
      auto file = ReadFileToString(corpus + "/" + input.media[k].path);
      ASSERT_TRUE(file.ok());
      EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()),
                *file);
    }
  }
  auto inspected = store::Inspect(*dataset);
  ASSERT_TRUE(inspected.ok()) << inspected.status().ToString();
  ASSERT_EQ(inspected->sources.size(), 2u);
  EXPECT_EQ(inspected->sources[0].name, "coco");
  EXPECT_EQ(inspected->sources[0].images.total, 24u);
  EXPECT_GT(inspected->sources[1].image_tokens.p50, 0u);
}

INSTANTIATE_TEST_SUITE_P(Formats, RoundTripTest,
                         ::testing::Values(InputFormat::kCanonical, InputFormat::kLlava,
                                           InputFormat::kChat, InputFormat::kMmc4,
                                           InputFormat::kObelics),
                         [](const auto& info) { return std::string(InputFormatName(info.param)); });

// mmc4 records no image sizes: synth gives image j of document d the real size of COCO image
// corpora::Mmc4CocoImage(seed, d, j), as the planner's built-in mmc4 corpus does, and puts it
// before its matched sentence.
TEST(SynthTest, Mmc4ImagesTakeTheSeededCocoSizesBeforeTheirSentence) {
  auto coco = corpora::ReadCocoCaptions(corpora::RealDataPath(corpora::kCocoCaptionsFile));
  auto documents = corpora::ReadMmc4Documents(corpora::RealDataPath(corpora::kMmc4DocsFile));
  ASSERT_TRUE(coco.ok() && documents.ok())
      << "real data: " << coco.status().ToString() << " " << documents.status().ToString();
  corpora::SynthOptions synth;
  synth.profile = "mmc4";
  synth.out_dir = FreshDir("synth_mmc4");
  synth.format = InputFormat::kCanonical;
  synth.metadata_only = true;
  synth.samples = 6;
  synth.seed = 3;
  auto report = corpora::Synthesize(synth);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->samples, 6u);
  const auto inputs = ReadInputs(report->path);
  ASSERT_EQ(inputs.size(), 6u);
  for (size_t d = 0; d < 6; ++d) {
    const corpora::Mmc4Document& document = (*documents)[d];
    const store::Sample& sample = inputs.at(fmt::format("mmc4-{}", document.line));
    // Expected: per sentence, its images in image_info order, then the sentence.
    std::vector<std::pair<uint32_t, uint32_t>> expected, written;
    std::vector<std::string> texts;
    for (size_t i = 0; i < document.sentences.size(); ++i) {
      for (size_t j = 0; j < document.images.size(); ++j) {
        if (document.images[j].matched_text_index != i) continue;
        const uint64_t k = corpora::Mmc4CocoImage(3, d, j, coco->images.size());
        const corpora::CocoImage& sized = coco->images[k];
        expected.emplace_back(sized.width, sized.height);
        texts.push_back("<image>");
      }
      texts.push_back(document.sentences[i]);
    }
    std::vector<std::string> segments;
    for (const store::Segment& segment : sample.segments) {
      segments.push_back(segment.is_media ? "<image>" : segment.text);
    }
    for (const store::MediaRef& media : sample.media)
      written.emplace_back(media.width, media.height);
    EXPECT_EQ(segments, texts) << "document " << d;
    EXPECT_EQ(written, expected) << "document " << d;
    for (const auto& [w, h] : written) EXPECT_LE(std::max(w, h), 640u);
  }
}

// A small prepared dataset to damage.
class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    corpus_ = FreshDir("verify_corpus");
    out_ = FreshDir("verify_out");
    corpora::SynthOptions synth;
    synth.profile = "tiny";
    synth.out_dir = corpus_;
    synth.samples = 12;
    synth.max_side = 96;
    synth.threads = 2;
    auto corpus = corpora::Synthesize(synth);
    ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
    PrepareOptions options;
    options.inputs = {{corpus->path, "tiny"}};
    options.out_dir = out_;
    options.tokenizer = &tokenizer_;
    options.samples_per_shard = 6;
    options.threads = 2;
    options.progress = false;
    ASSERT_TRUE(Prepare(options).ok());
    ASSERT_TRUE(store::VerifyDataset(out_, {2, false}, nullptr).ok());
  }

  Status Damage(const std::string& file, std::function<void(std::string&)> edit) {
    std::string path = out_ + "/tiny/" + file;
    std::string bytes = *ReadFileToString(path);
    edit(bytes);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return store::VerifyDataset(out_, {2, false}, nullptr);
  }

  std::string corpus_, out_;
  WordTokenizer tokenizer_;
};

TEST_F(VerifyTest, FlippedBitInImageDataNamesTheZipEntryAndSample) {
  auto dataset = store::Dataset::Open(out_);
  ASSERT_TRUE(dataset.ok());
  uint64_t offset = dataset->Sample(7)->media()[0].data_offset;  // shard 1, sample 1
  Status status = Damage("00001.zip", [&](std::string& b) { b[offset + 10] ^= 0x10; });
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kCorrupt);
  EXPECT_NE(status.message().find("00001.zip: entry '000001.0."), std::string::npos)
      << status.ToString();
  EXPECT_NE(status.message().find("CRC-32"), std::string::npos);
}

TEST_F(VerifyTest, TruncatedFilesAreCaught) {
  for (const char* file :
       {"00000.zip", "00000.jsonl", "00000.jsonl.idx", "00000.meta", "00000.tok"}) {
    SetUp();
    Status status = Damage(file, [](std::string& b) { b.resize(b.size() - 5); });
    ASSERT_FALSE(status.ok()) << file;
    EXPECT_NE(status.message().find("00000."), std::string::npos) << status.ToString();
  }
}

TEST_F(VerifyTest, FlippedBitInTextIsCaughtByTheChecksum) {
  Status status = Damage("00000.jsonl", [](std::string& b) { b[b.find("assistant") + 40] ^= 1; });
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("00000.jsonl"), std::string::npos) << status.ToString();
}

TEST_F(VerifyTest, MissingShardFileIsNotFound) {
  std::filesystem::remove(out_ + "/tiny/00001.tok");
  Status status = store::VerifyDataset(out_, {2, false}, nullptr);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_NE(status.message().find("00001.tok"), std::string::npos);
}

TEST_F(VerifyTest, IndexThatDisagreesWithTheJsonlNamesTheEntry) {
  Status status = Damage("00000.jsonl.idx", [](std::string& b) { b[8] += 1; });
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("00000.jsonl"), std::string::npos) << status.ToString();
}

}  // namespace
}  // namespace mmpt::ingest
