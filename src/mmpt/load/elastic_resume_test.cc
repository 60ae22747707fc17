// Elastic resume on a prepared real-data dataset (COCO caption pairs: real sizes and captions,
// synthetic pixels): the planner's state saved by a loader at DP 8, inside a step, restores at
// DP 4 and then at DP 16; no sample of the stream is lost or repeated, and the loaders of the new
// layout start where the restore says.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <map>

#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/cost/presets.h"
#include "mmpt/ingest/metadata_jsonl.h"
#include "mmpt/load/coco_corpus_test_util.h"
#include "mmpt/load/dataset_source.h"
#include "mmpt/load/loader.h"
#include "mmpt/load/plan_stream.h"
#include "mmpt/plan/elastic_test_util.h"
#include "mmpt/store/planning_table.h"

namespace mmpt::load {
namespace {

namespace fs = std::filesystem;

class ElasticResumeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test_util::FreshDir("elastic");
    Status built = testing::BuildCocoDataset(dir_, 240, 3);
    ASSERT_TRUE(built.ok()) << built.ToString();
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static plan::PlannerConfig Config(uint32_t dp, uint32_t ga, uint32_t mbs, uint32_t seq_len) {
    plan::PlannerConfig config;
    config.layout.dp = dp;
    config.layout.ep = 1;
    config.layout.ga = ga;
    config.layout.mbs = mbs;
    config.layout.seq_len = seq_len;
    config.seed = 3;
    return config;
  }

  static std::shared_ptr<PlanStream> Plans(const plan::PlannerConfig& planner) {
    PlanStreamConfig config;
    config.planner = planner;
    auto stream = PlanStream::Open(dir_, config);
    EXPECT_TRUE(stream.ok()) << stream.status().ToString();
    return *stream;
  }

  // The (source, index) of every sample the loaders of every DP rank deliver from `start` to
  // the end of step end_step - 1.
  static std::map<std::pair<uint32_t, uint64_t>, int> LoadAll(
      const std::shared_ptr<PlanStream>& plans, LoaderPosition start, uint64_t end_step) {
    auto source = DatasetSource::Open(dir_);
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    std::map<std::pair<uint32_t, uint64_t>, int> samples;
    for (uint32_t rank = 0; rank < plans->layout().dp; ++rank) {
      LoaderOptions options;
      options.dp_rank = rank;
      options.threads = 1;
      options.end_step = end_step;
      auto loader = Loader::Start(*source, plans->AsFunction(), options, start);
      EXPECT_TRUE(loader.ok()) << loader.status().ToString();
      if (!loader.ok()) return samples;
      for (;;) {
        auto batch = (*loader)->Next();
        EXPECT_TRUE(batch.ok()) << batch.status().ToString();
        if (!batch.ok() || *batch == nullptr) break;
        for (size_t i = 0; i < (*batch)->sample_index.size(); ++i) {
          ++samples[{(*batch)->sample_source[i], (*batch)->sample_index[i]}];
        }
      }
    }
    return samples;
  }

  // The samples of micro-steps [from, ga) of `step`'s plan, over every rank.
  static std::map<std::pair<uint32_t, uint64_t>, int> Planned(PlanStream& plans, uint64_t step,
                                                              uint32_t from) {
    auto plan = plans.Plan(step);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    std::map<std::pair<uint32_t, uint64_t>, int> samples;
    const plan::Layout& l = (*plan)->layout;
    for (uint32_t rank = 0; rank < l.dp; ++rank) {
      for (uint32_t micro = from; micro < l.ga; ++micro) {
        for (uint32_t slot = 0; slot < l.mbs; ++slot) {
          for (const plan::PlannedSequence& seq :
               (*plan)->Sequences((*plan)->Pack(rank, micro, slot))) {
            ++samples[{seq.source, seq.index}];
          }
        }
      }
    }
    return samples;
  }

  static std::string dir_;
};
std::string ElasticResumeTest::dir_;

// The run on the prepared dataset's planning table: 10 steps at DP 8, saved inside the
// next step; 10 at DP 4 under a longer seq_len; 5 at DP 16. What it delivered, dropped and still
// carries is exactly the stream's first draws (what an uninterrupted run takes over as many).
TEST_F(ElasticResumeTest, NoSampleOfThePreparedCorpusIsLostOrRepeated) {
  auto table = ingest::ReadPlanningTable(dir_);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->origin(), dir_ + "/mmpt.plan");  // the mapped planning table prepare wrote
  auto model =
      cost::CostModel::FromPresets("qwen2-vl", cost::Defaults::kLlm, cost::Defaults::kHardware);
  ASSERT_TRUE(model.ok());
  const std::vector<plan::testing::Segment> segments = {{Config(8, 2, 1, 1024), 10, 1},
                                                        {Config(4, 2, 1, 2048), 10, 0},
                                                        {Config(16, 1, 2, 1024), 5, 0}};
  const plan::testing::Taken taken = plan::testing::RunSegments(*table, *model, segments);
  ASSERT_EQ(taken.resumes.size(), 2u);
  EXPECT_EQ(taken.resumes[0].step, 11u);
  EXPECT_EQ(taken.resumes[1].step, 21u);
  // The corpus went round its epochs several times, so samples are taken more than once; each
  // exactly as often as the stream drew it.
  EXPECT_GT(taken.draws, 2 * table->num_samples());
  EXPECT_EQ(taken.rows, plan::testing::StreamPrefix(*table, segments[0].config, taken.draws));
}

// Through the loader: a loader at DP 8 stands inside step 2; the state it saves restores at DP
// 4, which resumes at step 3, micro-step 0, with the step's undelivered samples in its pool. The
// DP 4 loaders deliver exactly the plans of the restored stream. Restored at DP 8 instead, the
// same state resumes at the saved micro-step and the loaders deliver the rest of the step.
TEST_F(ElasticResumeTest, LoadersResumeWhereTheRestoreSays) {
  auto first = Plans(Config(8, 2, 1, 1024));
  auto source = DatasetSource::Open(dir_);
  ASSERT_TRUE(source.ok());
  LoaderOptions options;
  options.end_step = 3;
  auto loader = Loader::Start(*source, first->AsFunction(), options, {2, 0});
  ASSERT_TRUE(loader.ok());
  ASSERT_TRUE((*loader)->Next().ok());
  const LoaderPosition at = (*loader)->position();
  ASSERT_EQ(at, (LoaderPosition{2, 1}));
  auto state = first->StateAt(at.step, at.micro_step);
  ASSERT_TRUE(state.ok()) << state.status().ToString();

  auto smaller = Plans(Config(4, 2, 1, 1024));
  auto resume = smaller->Restore(*state);
  ASSERT_TRUE(resume.ok()) << resume.status().ToString();
  EXPECT_EQ(resume->step, 3u);
  EXPECT_EQ(resume->micro_step, 0u);
  EXPECT_EQ(resume->changed, std::vector<std::string>{"dp 8 → 4"});
  EXPECT_EQ(LoadAll(smaller, {resume->step, resume->micro_step}, 4), Planned(*smaller, 3, 0));

  auto same = Plans(Config(8, 2, 1, 1024));
  auto exact = same->Restore(*state);
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_EQ(exact->step, 2u);
  EXPECT_EQ(exact->micro_step, 1u);
  EXPECT_TRUE(exact->changed.empty());
  EXPECT_EQ(LoadAll(same, {exact->step, exact->micro_step}, 3), Planned(*first, 2, 1));
}

}  // namespace
}  // namespace mmpt::load
