// The loader executes the plan: for every (DP rank, micro-step, CP rank) its THD shard,
// cu_seqlens_padded, padding and vision-DP routing are the ones the plan's cp stage decided,
// and every routed embedding row lands on an image placeholder of its consumer. The corpus is
// prepared (`mmpt prepare`'s code path) from ../shared/data/real: COCO caption pairs (image
// first, also as a WebDataset tar) and mmc4 documents (images between paragraphs), so token
// positions are not trivial.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>

#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/corpora/synth.h"
#include "mmpt/cp/thd_split.h"
#include "mmpt/ingest/metadata_jsonl.h"
#include "mmpt/ingest/prepare.h"
#include "mmpt/load/dataset_source.h"
#include "mmpt/load/loader.h"
#include "mmpt/load/plan_stream.h"
#include "mmpt/store/planning_table.h"

namespace mmpt::load {
namespace {

namespace fs = std::filesystem;

constexpr int32_t kImagePad = 151655;

class PlanExecutionSlow : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = test_util::FreshDir("plan_execution");
    ingest::PrepareOptions prepare;
    struct Input {
      const char* profile;
      ingest::InputFormat format;
      uint64_t samples;
      const char* source;
    };
    // The COCO pairs also as a WebDataset tar, which plans and loads like any other input.
    for (const Input& input : {Input{"coco", ingest::InputFormat::kLlava, 40, "coco"},
                               Input{"mmc4", ingest::InputFormat::kMmc4, 6, "mmc4"},
                               Input{"coco", ingest::InputFormat::kWebDataset, 12, "coco-wds"}}) {
      corpora::SynthOptions synth;
      synth.profile = input.profile;
      synth.samples = input.samples;
      synth.out_dir = root_ + "/raw";
      synth.format = input.format;
      synth.threads = 2;
      auto report = corpora::Synthesize(synth);
      ASSERT_TRUE(report.ok()) << report.status().ToString();
      prepare.inputs.push_back({report->path, input.source});
    }
    prepare.out_dir = root_ + "/ds";
    prepare.samples_per_shard = 16;
    prepare.threads = 2;
    prepare.progress = false;
    prepare.on_error = ErrorPolicy::kFail;
    auto tokenizer = ingest::UseTokenizer("", prepare);
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
    auto prepared = ingest::Prepare(prepare);
    ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::string root_;
};
std::string PlanExecutionSlow::root_;

// Every (DP rank, micro-step, CP rank) batch of step 0 against the plan, under `layout`, of
// mmpt's planner or the vanilla baseline's.
void CheckLoaderExecutesPlan(const std::string& dir, plan::Layout layout, bool vanilla = false) {
  SCOPED_TRACE(fmt::format("cp {} tp {} vanilla {}", layout.cp, layout.tp, vanilla));
  PlanStreamConfig config;
  config.planner.layout = layout;
  config.planner.seed = 3;
  // The 58 samples hold fewer tokens than a step of 4 packs of 8192: a step repeats some, which
  // the loader executes like any other plan.
  config.planner.allow_repeat = true;
  config.vanilla = vanilla;
  auto stream = PlanStream::Open(dir, config);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  auto source = DatasetSource::Open(dir);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto plan = (*stream)->Plan(0);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const plan::StepPlan& p = **plan;
  ASSERT_EQ(p.cp.size(), p.packs.size());
  const uint32_t pad = 2 * layout.cp * (layout.tp > 1 ? layout.tp : 1);

  size_t images_checked = 0;
  for (uint32_t d = 0; d < layout.dp; ++d) {
    std::vector<std::vector<std::shared_ptr<Batch>>> by_rank(layout.cp);  // [cp rank][micro]
    for (uint32_t r = 0; r < layout.cp; ++r) {
      LoaderOptions options;
      options.dp_rank = d;
      options.cp_rank = r;
      options.end_step = 1;
      auto loader = Loader::Start(*source, (*stream)->AsFunction(), options);
      ASSERT_TRUE(loader.ok()) << loader.status().ToString();
      for (uint32_t m = 0; m < layout.ga; ++m) {
        auto batch = (*loader)->Next();
        ASSERT_TRUE(batch.ok()) << batch.status().ToString();
        by_rank[r].push_back(*batch);
      }
    }
    for (uint32_t m = 0; m < layout.ga; ++m) {
      SCOPED_TRACE(fmt::format("dp rank {} micro-step {}", d, m));
      const size_t pack = p.PackIndex(d, m, 0);
      const plan::PackCp& planned = p.cp[pack];
      const cp::ThdSplit& split = planned.split;
      EXPECT_EQ(split.pad_multiple, pad);
      for (uint32_t r = 0; r < layout.cp; ++r) {
        const Batch& batch = *by_rank[r][m];
        EXPECT_EQ(batch.plan_hash, p.Hash());
        EXPECT_EQ(batch.pad_multiple, pad);
        EXPECT_EQ(
            std::vector<uint32_t>(batch.cu_seqlens_padded.begin(), batch.cu_seqlens_padded.end()),
            split.cu_seqlens_padded);
        EXPECT_EQ(std::vector<uint32_t>(batch.cu_seqlens.begin(), batch.cu_seqlens.end()),
                  split.cu_seqlens);
        EXPECT_EQ(batch.tokens.size(), split.padded_tokens() / layout.cp);
        ASSERT_EQ(batch.image_encoder.size(), planned.vision.encoders.size());
        std::vector<int32_t> encoded;
        for (size_t k = 0; k < planned.vision.encoders.size(); ++k) {
          EXPECT_EQ(batch.image_encoder[k], static_cast<int32_t>(planned.vision.encoders[k][0]));
          const auto& e = planned.vision.encoders[k];
          if (std::find(e.begin(), e.end(), r) != e.end())
            encoded.push_back(static_cast<int32_t>(k));
        }
        EXPECT_EQ(batch.encoded_images, encoded);
        std::vector<RouteSegment> routes;
        for (uint32_t c = 0; c < layout.cp; ++c) {
          for (const cp::RowSegment& s : planned.vision.consumed[c]) {
            routes.push_back({static_cast<int32_t>(c), static_cast<int32_t>(s.image),
                              static_cast<int32_t>(s.row_begin), static_cast<int32_t>(s.row_count),
                              static_cast<int32_t>(s.local_offset),
                              static_cast<int32_t>(s.source_rank)});
          }
        }
        EXPECT_EQ(batch.routes, routes);
        // Every routed row feeds an image placeholder of its consumer.
        for (const RouteSegment& s : batch.routes) {
          for (int32_t k = 0; k < s.row_count; ++k) {
            ASSERT_EQ(by_rank[s.consumer][m]->tokens[s.local_offset + k], kImagePad);
          }
        }
      }
      // Reassembled from the shards, the pack holds each planned image's placeholders exactly
      // where the plan put them, and nothing else is a placeholder.
      std::vector<int32_t> tokens(split.padded_tokens(), -1);
      for (uint32_t r = 0; r < layout.cp; ++r) {
        auto indices = cp::PartitionedIndices(split.cu_seqlens_padded, layout.cp, r);
        ASSERT_TRUE(indices.ok());
        for (size_t i = 0; i < indices->size(); ++i) {
          tokens[(*indices)[i]] = by_rank[r][m]->tokens[i];
        }
      }
      std::vector<uint8_t> is_image(tokens.size(), 0);
      auto sequences = p.Sequences(p.packs[pack]);
      for (size_t s = 0; s < sequences.size(); ++s) {
        for (const plan::PlannedImage& image : p.Images(sequences[s])) {
          const uint32_t at = split.cu_seqlens_padded[s] + image.token_start;
          for (uint32_t k = 0; k < image.llm_tokens; ++k) is_image[at + k] = 1;
          ++images_checked;
        }
      }
      for (size_t i = 0; i < tokens.size(); ++i) {
        ASSERT_EQ(tokens[i] == kImagePad, is_image[i] == 1) << "token " << i;
      }
    }
  }
  EXPECT_GT(images_checked, 0u);
}

TEST_F(PlanExecutionSlow, LoaderShardsAndRoutingAreThePlansAtEveryCpAndTp) {
  const std::string dir = root_ + "/ds";
  for (uint32_t cp : {1u, 2u, 4u}) {
    for (uint32_t tp : {1u, 2u}) {
      CheckLoaderExecutesPlan(dir, plan::Layout{.dp = 2,
                                                .tp = tp,
                                                .cp = cp,
                                                .ga = 2,
                                                .seq_len = 8192,
                                                .sync = plan::SyncModel::kStep});
    }
  }
}

// The baseline's plans reach the loader as mmpt's do, so a training run can measure both;
// they are the VanillaPlanner's own, step by step, and cannot be saved or replayed.
TEST_F(PlanExecutionSlow, LoaderExecutesTheVanillaPlannersPlans) {
  const std::string dir = root_ + "/ds";
  const plan::Layout layout{
      .dp = 2, .cp = 2, .ga = 2, .seq_len = 4096, .sync = plan::SyncModel::kStep};
  CheckLoaderExecutesPlan(dir, layout, /*vanilla=*/true);

  PlanStreamConfig config;
  config.planner.layout = layout;
  config.planner.vanilla_buffer = 8;
  config.vanilla = true;
  auto stream = PlanStream::Open(dir, config);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  EXPECT_EQ((*stream)->planner_name(), "vanilla");
  // The same table and cost model, planned directly.
  const cost::SampleTable& table = (*stream)->table();
  const cost::CostModel& model = (*stream)->model();
  auto direct = plan::VanillaPlanner::Create(table, model, config.planner);
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  for (uint64_t step = 0; step < 6; ++step) {
    auto served = (*stream)->Plan(step);
    auto planned = direct->PlanStep();
    ASSERT_TRUE(served.ok() && planned.ok()) << step;
    EXPECT_EQ((*served)->Hash(), planned->Hash()) << step;
  }
  EXPECT_EQ((*stream)->Plan(0).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ((*stream)->StateAt(6).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*stream)->Restore("state").status().code(), StatusCode::kInvalidArgument);
}

// A stream takes back the memory of a plan that left its cache and that nothing else holds
// (Planner::PlanStep's `recycled`): the plans are the planner's own, step by step, under CP 1
// and CP 2 (whose cp entries are overwritten).
TEST_F(PlanExecutionSlow, StreamPlansInRecycledMemoryAreThePlannersOwn) {
  const std::string dir = root_ + "/ds";
  for (uint32_t cp : {1u, 2u}) {
    SCOPED_TRACE(fmt::format("cp {}", cp));
    PlanStreamConfig config;
    config.planner.layout = {.dp = 2, .cp = cp, .ga = 2, .seq_len = 4096};
    config.planner.allow_repeat = true;
    auto stream = PlanStream::Open(dir, config);
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    auto direct = plan::Planner::Create((*stream)->table(), (*stream)->model(), config.planner);
    ASSERT_TRUE(direct.ok()) << direct.status().ToString();
    for (uint64_t step = 0; step < 12; ++step) {  // steps 4.. in the memory of steps 0..
      auto served = (*stream)->Plan(step);
      auto planned = direct->PlanStep();
      ASSERT_TRUE(served.ok() && planned.ok()) << step;
      EXPECT_EQ((*served)->Hash(), planned->Hash()) << step;
    }
  }
}

// "packed" serves mmpt's packs dealt in packing order (the ablation's "+ global packing"), the
// same packs as mmpt's plan, and like the baseline it is not saved.
TEST_F(PlanExecutionSlow, PackedStreamDealsMmptsPacksInPackingOrder) {
  const std::string dir = root_ + "/ds";
  PlanStreamConfig config;
  config.planner.layout = {.dp = 2, .cp = 2, .ga = 2, .seq_len = 4096};
  auto mmpt_stream = PlanStream::Open(dir, config);
  config.reorder = false;
  auto packed = PlanStream::Open(dir, config);
  ASSERT_TRUE(mmpt_stream.ok() && packed.ok()) << packed.status().ToString();
  EXPECT_EQ((*packed)->planner_name(), "packed");
  for (uint64_t step = 0; step < 3; ++step) {
    auto served = (*packed)->Plan(step);
    auto balanced = (*mmpt_stream)->Plan(step);
    ASSERT_TRUE(served.ok() && balanced.ok()) << step;
    EXPECT_EQ((*served)->Hash(), plan::DealInPackingOrder(**balanced).Hash()) << step;
    EXPECT_NE((*served)->Hash(), (*balanced)->Hash()) << step;
  }
  EXPECT_EQ((*packed)->StateAt(1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*packed)->Restore("state").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(PlanExecutionSlow, InterleavedImagesSitWhereTheirTextPutsThem) {
  auto table = ingest::ReadPlanningTable(root_ + "/ds");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  // mmc4 documents put images between paragraphs: some image follows text.
  size_t after_text = 0;
  for (uint32_t position : table->image_text_positions) after_text += position > 0;
  EXPECT_GT(after_text, 0u);
}

}  // namespace
}  // namespace mmpt::load
