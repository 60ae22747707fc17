// The loader on a real-data dataset: COCO caption pairs (real sizes and captions, synthetic
// pixels, Qwen3 token ids) planned by the planner and loaded through DatasetSource.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/load/coco_corpus_test_util.h"
#include "mmpt/load/dataset_source.h"
#include "mmpt/load/loader.h"
#include "mmpt/load/plan_stream.h"
#include "mmpt/media/image_preprocess.h"
#include "mmpt/store/planning_table.h"

namespace mmpt::load {
namespace {

namespace fs = std::filesystem;

class DatasetLoadTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test_util::FreshDir("load_coco");
    Status built = testing::BuildCocoDataset(dir_, 48, 2);
    ASSERT_TRUE(built.ok()) << built.ToString();
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // A copy of the dataset this test may damage.
  std::string Copy(const std::string& name) {
    std::string copy = dir_ + "_" + name;
    fs::remove_all(copy);
    fs::copy(dir_, copy, fs::copy_options::recursive);
    copies_.push_back(copy);
    return copy;
  }
  void TearDown() override {
    for (const auto& c : copies_) fs::remove_all(c);
  }

  static std::shared_ptr<PlanStream> Plans(const std::string& dir, uint32_t dp = 2, uint32_t ga = 2,
                                           uint32_t cp = 1) {
    PlanStreamConfig config;
    config.planner.layout.dp = dp;
    config.planner.layout.ga = ga;
    config.planner.layout.cp = cp;
    config.planner.layout.seq_len = 2048;
    config.planner.layout.sync = plan::SyncModel::kStep;
    config.planner.seed = 7;
    auto stream = PlanStream::Open(dir, config);
    EXPECT_TRUE(stream.ok()) << stream.status().ToString();
    return *stream;
  }

  static LoaderOptions Options(uint32_t dp_rank, uint64_t end_step) {
    LoaderOptions options;
    options.dp_rank = dp_rank;
    options.threads = 2;
    options.end_step = end_step;
    return options;
  }

  static std::string dir_;
  std::vector<std::string> copies_;
};
std::string DatasetLoadTest::dir_;

TEST_F(DatasetLoadTest, BatchesHoldStoredIdsPlaceholdersAndPreprocessedPixels) {
  auto source = DatasetSource::Open(dir_);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto plans = Plans(dir_);
  auto loader = Loader::Start(*source, plans->AsFunction(), Options(1, 1));
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  auto batch = (*loader)->Next();
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  const Batch& b = **batch;
  ASSERT_GT(b.sample_index.size(), 1u);
  ASSERT_EQ(b.image_grid_thw.size(), 3 * b.sample_index.size());
  uint64_t patch_row = 0;
  for (size_t s = 0; s < b.sample_index.size(); ++s) {
    auto global = (*source)->dataset().GlobalIndex(b.sample_source[s], b.sample_index[s]);
    ASSERT_TRUE(global.ok());
    const store::Dataset& dataset = (*source)->dataset();
    auto ids = dataset.Sample(*global)->Tokens();
    ASSERT_TRUE(ids.ok());
    // The sample is its rendered ids (system turn, user turn opening with <|vision_start|>)
    // with the image's placeholders at the position .meta records, right after
    // <|vision_start|>, and <|vision_end|> after them.
    const int32_t begin = b.cu_seqlens_padded[s];
    const int32_t length = b.cu_seqlens[s + 1] - b.cu_seqlens[s];
    const int32_t image_tokens = length - static_cast<int32_t>(ids->size());
    const uint32_t at = dataset.Sample(*global)->media()[0].text_position;
    const text::Tokenizer& tokenizer = (*source)->renderer().tokenizer();
    ASSERT_GT(image_tokens, 0);
    ASSERT_GT(at, 0u);
    EXPECT_EQ((*ids)[at - 1], *tokenizer.TokenToId("<|vision_start|>"));
    EXPECT_EQ((*ids)[at], *tokenizer.TokenToId("<|vision_end|>"));
    for (int32_t i = 0; i < length; ++i) {
      const int32_t want = i < int32_t(at)                  ? (*ids)[i]
                           : i < int32_t(at) + image_tokens ? *tokenizer.TokenToId("<|image_pad|>")
                                                            : (*ids)[i - image_tokens];
      ASSERT_EQ(b.tokens[begin + i], want) << "sample " << s << " token " << i;
    }
    // No placeholder is a target, and no token of the system turn.
    for (int32_t i = 0; i <= int32_t(at) + image_tokens; ++i) {
      EXPECT_EQ(b.labels[begin + i], kIgnoreLabel) << i;
    }
    // Pixels equal the media pipeline's on the same bytes.
    auto bytes = dataset.Sample(*global)->Media(0);
    ASSERT_TRUE(bytes.ok());
    auto expected = media::PreprocessImage(*bytes);
    ASSERT_TRUE(expected.ok()) << expected.status().ToString();
    EXPECT_EQ(b.image_grid_thw[3 * s + 1], static_cast<int32_t>(expected->grid.h));
    EXPECT_EQ(b.image_grid_thw[3 * s + 2], static_cast<int32_t>(expected->grid.w));
    EXPECT_EQ(static_cast<uint64_t>(image_tokens), expected->grid.patches() / 4);
    ASSERT_LE((patch_row + expected->grid.patches()) * b.patch_dim, b.pixel_values.size());
    EXPECT_TRUE(std::equal(expected->pixel_values.begin(), expected->pixel_values.end(),
                           b.pixel_values.begin() + patch_row * b.patch_dim));
    patch_row += expected->grid.patches();
    // M-RoPE: the image spans grid_h/2 rows and grid_w/2 columns from position `at`, after
    // the `at` text tokens before it.
    const size_t t = b.tokens.size();
    const int32_t last = begin + at + image_tokens - 1;
    EXPECT_EQ(b.position_ids[t + last], int32_t(at + expected->grid.h / 2 - 1));
    EXPECT_EQ(b.position_ids[2 * t + last], int32_t(at + expected->grid.w / 2 - 1));
  }
  EXPECT_EQ(patch_row, b.num_patches());
}

// The default loss: the caption (the assistant's turn) and its end marker "<|im_end|>\n".
TEST_F(DatasetLoadTest, AssistantOnlyLossCountsCaptionTokens) {
  auto source = DatasetSource::Open(dir_);
  ASSERT_TRUE(source.ok());
  auto loader = Loader::Start(*source, Plans(dir_)->AsFunction(), Options(0, 1));
  ASSERT_TRUE(loader.ok());
  auto batch = (*loader)->Next();
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  double targets = 0;
  for (float m : (*batch)->loss_mask) targets += m;
  uint64_t caption_tokens = 0;
  for (size_t s = 0; s < (*batch)->sample_index.size(); ++s) {
    auto global = (*source)->dataset().GlobalIndex(0, (*batch)->sample_index[s]);
    store::SampleView sample;
    ASSERT_TRUE((*source)->dataset().Sample(*global)->Read(sample).ok());
    const text::Tokenizer& tokenizer = (*source)->renderer().tokenizer();
    caption_tokens += *tokenizer.Count(sample.segments.back().text) + 2;
  }
  EXPECT_EQ(targets, static_cast<double>(caption_tokens));
}

TEST_F(DatasetLoadTest, RestartFromSavedStateGivesIdenticalBatches) {
  auto source = DatasetSource::Open(dir_);
  ASSERT_TRUE(source.ok());
  auto plans = Plans(dir_);
  auto loader = Loader::Start(*source, plans->AsFunction(), Options(0, 6));
  ASSERT_TRUE(loader.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*loader)->Next().ok());
  const LoaderPosition at = (*loader)->position();
  auto state = plans->StateAt(at.step);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  std::vector<std::shared_ptr<Batch>> expected;
  for (int i = 0; i < 4; ++i) expected.push_back(*(*loader)->Next());

  auto fresh = Plans(dir_);  // a new process: fresh planner, restored state
  ASSERT_TRUE(fresh->Restore(*state).ok());
  auto resumed = Loader::Start(*source, fresh->AsFunction(), Options(0, 6), at);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  for (const auto& want : expected) {
    auto got = (*resumed)->Next();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ((*got)->plan_hash, want->plan_hash);
    EXPECT_EQ((*got)->sample_index, want->sample_index);
    EXPECT_EQ((*got)->tokens, want->tokens);
    EXPECT_EQ((*got)->pixel_values, want->pixel_values);
  }
}

// Flip bytes inside the image of the first sample rank 0 loads; return its dataset index.
uint64_t CorruptFirstImage(const std::string& dir, PlanStream& plans, DatasetSource& source) {
  auto plan = plans.Plan(0);
  const plan::PlannedSequence& seq = (*plan)->Sequences((*plan)->Pack(0, 0)).front();
  uint64_t global = *source.dataset().GlobalIndex(seq.source, seq.index);
  auto [shard, local] = source.dataset().Locate(global);
  const store::MediaMeta m = source.dataset().Sample(global)->media()[0];
  std::fstream zip(dir + "/" + std::string(source.dataset().shards().stem(shard)) + ".zip",
                   std::ios::in | std::ios::out | std::ios::binary);
  zip.seekp(static_cast<std::streamoff>(m.data_offset + m.data_size / 2));
  zip.write("\x5a\xa5\x5a\xa5\x5a\xa5", 6);
  return seq.index;
}

TEST_F(DatasetLoadTest, ImageCorruptedAfterPrepareFailsOrIsDroppedByPolicy) {
  std::string dir = Copy("corrupt");
  auto plans = Plans(dir);
  auto source = DatasetSource::Open(dir);
  ASSERT_TRUE(source.ok());
  const uint64_t bad = CorruptFirstImage(dir, *plans, **source);

  auto failing = Loader::Start(*source, plans->AsFunction(), Options(0, 1));
  ASSERT_TRUE(failing.ok());
  auto error = (*failing)->Next();
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), StatusCode::kCorrupt);
  // The error names the shard line, the sample's key and the image's path.
  const store::Dataset& dataset = (*source)->dataset();
  const uint64_t global = *dataset.GlobalIndex(0, bad);
  store::SampleView sample;
  ASSERT_TRUE(dataset.Sample(global)->Read(sample).ok());
  for (const std::string& part : {dataset.Sample(global)->Where(), std::string(sample.key),
                                  "image 0 ('" + std::string(sample.media[0].path) + "')"}) {
    EXPECT_NE(error.status().message().find(part), std::string::npos)
        << part << " in " << error.status().message();
  }
  EXPECT_NE(error.status().message().find("CRC-32"), std::string::npos);

  LoaderOptions drop = Options(0, 1);
  drop.on_error = ErrorPolicy::kSkip;
  auto dropping = Loader::Start(*source, plans->AsFunction(), drop);
  ASSERT_TRUE(dropping.ok());
  auto batch = (*dropping)->Next();
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ((*batch)->dropped.size(), 1u);
  EXPECT_EQ((*batch)->dropped[0].index, bad);
  EXPECT_NE((*batch)->dropped[0].reason.find("CRC-32"), std::string::npos);
  for (uint64_t index : (*batch)->sample_index) EXPECT_NE(index, bad);
  EXPECT_EQ((*batch)->image_grid_thw.size(), 3 * (*batch)->sample_index.size());
}

// A planning table that is not of the dataset's shards (every image 28 px wider, its checksum
// recorded in the manifest, so it opens) plans items the shards' .meta do not record: the loader
// refuses them, naming mmpt.plan, rather than render them at the plan's sizes.
TEST_F(DatasetLoadTest, APlanningTableOfOtherShardsIsRefusedWhenLoading) {
  std::string dir = Copy("stale");
  auto dataset = store::Dataset::Open(dir);
  ASSERT_TRUE(dataset.ok());
  cost::SampleTableBuilder builder;
  for (const std::string& name : dataset->sources()) builder.AddSource(name);
  for (uint32_t s = 0; s < dataset->sources().size(); ++s) {
    for (uint64_t i = 0; i < dataset->source_size(s); ++i) {
      const uint64_t global = *dataset->GlobalIndex(s, i);
      std::vector<cost::ImageSize> images;
      std::vector<uint32_t> positions;
      for (const store::MediaMeta& m : dataset->Sample(global)->media()) {
        images.push_back({m.width + 28, m.height});
        positions.push_back(m.text_position);
      }
      ASSERT_TRUE(
          builder.Add(s, dataset->Sample(global)->meta().text_tokens, images, positions).ok());
    }
  }
  auto wider = std::move(builder).Finish();
  ASSERT_TRUE(wider.ok());
  ASSERT_TRUE(store::WritePlanningTable(dir, *wider, *store::ReadManifest(dir)).ok());

  auto source = DatasetSource::Open(dir);
  ASSERT_TRUE(source.ok());
  auto loader = Loader::Start(*source, Plans(dir)->AsFunction(), Options(0, 1));
  ASSERT_TRUE(loader.ok());
  auto error = (*loader)->Next();
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(error.status().message().find("where the shard's .meta records"), std::string::npos)
      << error.status().ToString();
  EXPECT_NE(error.status().message().find("mmpt.plan"), std::string::npos);
}

TEST_F(DatasetLoadTest, WithoutCrcCheckTheDecoderStillCatchesItOrItIsDropped) {
  std::string dir = Copy("corrupt_nocrc");
  auto plans = Plans(dir);
  DatasetSourceOptions options;
  options.verify_crc = false;
  auto source = DatasetSource::Open(dir, options);
  ASSERT_TRUE(source.ok());
  // Damage the JPEG header's start marker so decoding (not only the checksum) fails.
  auto plan = plans->Plan(0);
  const plan::PlannedSequence& seq = (*plan)->Sequences((*plan)->Pack(0, 0)).front();
  uint64_t global = *(*source)->dataset().GlobalIndex(seq.source, seq.index);
  auto [shard, local] = (*source)->dataset().Locate(global);
  const store::MediaMeta m = (*source)->dataset().Sample(global)->media()[0];
  {
    std::fstream zip(dir + "/" + std::string((*source)->dataset().shards().stem(shard)) + ".zip",
                     std::ios::in | std::ios::out | std::ios::binary);
    zip.seekp(static_cast<std::streamoff>(m.data_offset));
    zip.write("\0\0\0\0", 4);
  }
  LoaderOptions drop = Options(0, 1);
  drop.on_error = ErrorPolicy::kSkip;
  auto loader = Loader::Start(*source, plans->AsFunction(), drop);
  ASSERT_TRUE(loader.ok());
  auto batch = (*loader)->Next();
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ((*batch)->dropped.size(), 1u);
  EXPECT_EQ((*batch)->dropped[0].index, seq.index);
}

TEST_F(DatasetLoadTest, MissingShardIsNamedAndItsSamplesDroppedByPolicy) {
  std::string dir = Copy("missing");
  auto plans = Plans(dir, 1, 4);
  fs::remove(dir + "/coco/00001.zip");
  auto source = DatasetSource::Open(dir);
  ASSERT_TRUE(source.ok());

  auto failing = Loader::Start(*source, plans->AsFunction(), Options(0, 1));
  ASSERT_TRUE(failing.ok());
  Status first_error;
  for (int i = 0; i < 4 && first_error.ok(); ++i) first_error = (*failing)->Next().status();
  ASSERT_FALSE(first_error.ok());
  EXPECT_NE(first_error.message().find("coco/00001.zip"), std::string::npos)
      << first_error.message();

  LoaderOptions drop = Options(0, 1);
  drop.on_error = ErrorPolicy::kSkip;
  auto dropping = Loader::Start(*source, plans->AsFunction(), drop);
  ASSERT_TRUE(dropping.ok());
  uint64_t kept = 0, dropped = 0;
  for (int i = 0; i < 4; ++i) {
    auto batch = (*dropping)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    kept += (*batch)->sample_index.size();
    dropped += (*batch)->dropped.size();
    for (const DroppedSample& d : (*batch)->dropped) {
      EXPECT_GE(d.index, 24u);  // shard 1 holds samples 24..47 of the source
      EXPECT_NE(d.reason.find("00001.zip"), std::string::npos) << d.reason;
    }
    for (uint64_t index : (*batch)->sample_index) EXPECT_LT(index, 24u);
  }
  EXPECT_GT(kept, 0u);
  EXPECT_GT(dropped, 0u);
}

TEST_F(DatasetLoadTest, CpRanksSplitTokensAndEncodeEachImageOnce) {
  auto source = DatasetSource::Open(dir_);
  ASSERT_TRUE(source.ok());
  auto plans = Plans(dir_, 1, 1, 2);
  std::vector<std::shared_ptr<Batch>> shards;
  for (uint32_t r = 0; r < 2; ++r) {
    LoaderOptions options = Options(0, 1);
    options.cp_rank = r;
    auto loader = Loader::Start(*source, plans->AsFunction(), options);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    auto batch = (*loader)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    shards.push_back(*batch);
  }
  EXPECT_EQ(shards[0]->cu_seqlens_padded, shards[1]->cu_seqlens_padded);
  EXPECT_EQ(shards[0]->tokens.size() + shards[1]->tokens.size(),
            static_cast<size_t>(shards[0]->cu_seqlens_padded.back()));
  EXPECT_EQ(shards[0]->encoded_images.size() + shards[1]->encoded_images.size(),
            shards[0]->image_rows.size());
  EXPECT_GT(shards[0]->encoded_images.size(), 0u);
  EXPECT_GT(shards[1]->encoded_images.size(), 0u);
  EXPECT_EQ(shards[0]->routes, shards[1]->routes);
}

}  // namespace
}  // namespace mmpt::load
