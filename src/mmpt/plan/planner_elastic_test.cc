// Elastic resume: a planner state saved under one layout restores under another (Planner::
// RestoreState), at a step boundary or inside a step, and the sample stream goes on with no
// sample lost or repeated.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "mmpt/corpora/real_corpora.h"
#include "mmpt/cost/presets.h"
#include "mmpt/plan/elastic_test_util.h"
#include "mmpt/plan/planner.h"

namespace mmpt::plan {
namespace {

struct Mix {
  cost::SampleTable table;
  cost::CostModel model;
  cost::CostedSamples costs;
};

// The real-data pretraining mix (coco pairs, mmc4 documents, text, long text), once.
const Mix& RealMix() {
  static const Mix* mix = [] {
    auto table = corpora::PretrainingMixCorpus();
    EXPECT_TRUE(table.ok()) << table.status().ToString();
    auto model = cost::CostModel::FromPresets(cost::Defaults::kVision, cost::Defaults::kLlm,
                                              cost::Defaults::kHardware);
    EXPECT_TRUE(model.ok());
    auto costs = cost::CostSamples(*table, *model);
    EXPECT_TRUE(costs.ok());
    return new Mix{std::move(*table), std::move(*model), std::move(*costs)};
  }();
  return *mix;
}

PlannerConfig ConfigOf(uint32_t dp, uint32_t ga, uint32_t mbs, uint32_t cp, uint32_t seq_len,
                       pack::OverlongPolicy overlong = pack::OverlongPolicy::kTruncate) {
  PlannerConfig config;
  config.layout.dp = dp;
  config.layout.ep = std::min<uint32_t>(dp, 4);
  config.layout.ga = ga;
  config.layout.mbs = mbs;
  config.layout.cp = cp;
  config.layout.seq_len = seq_len;
  config.overlong = overlong;
  config.seed = 11;
  config.source_weights.assign(std::begin(corpora::kPretrainingMixWeights),
                               std::end(corpora::kPretrainingMixWeights));
  return config;
}

Planner MakePlanner(const Mix& mix, const PlannerConfig& config) {
  auto planner = Planner::Create(mix.table, mix.model, config);
  EXPECT_TRUE(planner.ok()) << planner.status().ToString();
  return std::move(*planner);
}

bool Has(const std::vector<std::string>& changed, const std::string& what) {
  return std::find(changed.begin(), changed.end(), what) != changed.end();
}

// The run on the real-data mix (four sources blended by weight): 10 steps at DP 8,
// saved inside step 10 (after micro-step 1 of 2); 10 steps at DP 4 under CP 2, a shorter
// seq_len and the drop policy, saved at a step boundary; 5 steps at DP 16. Every sample
// delivered, dropped or still carried is, as a multiset, exactly the stream's first draws: what
// an uninterrupted run takes over as many draws. So no sample is lost or repeated, and the
// blend holds.
TEST(PlannerElasticTest, ResumesUnderOtherLayoutsWithNoSampleLostOrRepeated) {
  const Mix& mix = RealMix();
  const std::vector<testing::Segment> segments = {
      {ConfigOf(8, 2, 1, 1, 4096), 10, 1},
      {ConfigOf(4, 4, 1, 2, 2048, pack::OverlongPolicy::kDrop), 10, 0},
      {ConfigOf(16, 1, 2, 1, 4096), 5, 0}};
  const testing::Taken taken = testing::RunSegments(mix.table, mix.model, segments);
  ASSERT_EQ(taken.resumes.size(), 2u);
  EXPECT_EQ(taken.resumes[0].step, 11u);  // saved inside step 10: the stream goes on at 11
  EXPECT_EQ(taken.resumes[0].micro_step, 0u);
  EXPECT_TRUE(Has(taken.resumes[0].changed, "dp 8 → 4"));
  EXPECT_TRUE(Has(taken.resumes[0].changed, "seq_len 4096 → 2048"));
  EXPECT_TRUE(Has(taken.resumes[0].changed, "cp 1 → 2"));
  EXPECT_EQ(taken.resumes[1].step, 21u);
  EXPECT_EQ(taken.rows, testing::StreamPrefix(mix.table, segments[0].config, taken.draws));

  // An uninterrupted run at DP 8 takes the same stream prefix over its draws.
  const std::vector<testing::Segment> whole = {{segments[0].config, 30, 0}};
  const testing::Taken reference = testing::RunSegments(mix.table, mix.model, whole);
  EXPECT_GT(reference.draws, taken.draws);
  EXPECT_EQ(reference.rows, testing::StreamPrefix(mix.table, whole[0].config, reference.draws));
}

// Carried samples are fitted again under the restoring planner: under a shorter seq_len and the
// drop policy, one that no longer fits is listed in the next step's dropped samples.
TEST(PlannerElasticTest, CarriedSamplesThatNoLongerFitAreDroppedByTheNextStep) {
  const Mix& mix = RealMix();
  Planner a = MakePlanner(mix, ConfigOf(4, 4, 1, 1, 8192));
  const std::string before = a.SaveState();
  auto plan = a.PlanStep();
  ASSERT_TRUE(plan.ok());
  auto state = a.StateWithinStep(before, a.SaveState(), *plan, 1);
  ASSERT_TRUE(state.ok());
  Planner b = MakePlanner(mix, ConfigOf(4, 4, 1, 1, 1024, pack::OverlongPolicy::kDrop));
  ASSERT_TRUE(b.RestoreState(*state).ok());
  std::multiset<uint64_t> too_long;
  for (const PlacedSample& s : b.carried()) {
    if (mix.table.text_tokens[s.row] + mix.costs.image_tokens[s.row] > 1024) too_long.insert(s.row);
  }
  ASSERT_FALSE(too_long.empty()) << "the case should carry a sample the new seq_len drops";
  auto next = b.PlanStep();
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  std::multiset<uint64_t> dropped;
  for (const SampleId& id : next->dropped) {
    dropped.insert(testing::RowOf(mix.table, id.source, id.index));
  }
  EXPECT_TRUE(std::includes(dropped.begin(), dropped.end(), too_long.begin(), too_long.end()));
}

// Under the same settings a state saved inside a step resumes at its micro-step, and the plans
// that follow are those of the uninterrupted run.
TEST(PlannerElasticTest, SameLayoutResumesInsideTheStepExactly) {
  const Mix& mix = RealMix();
  const PlannerConfig config = ConfigOf(4, 4, 1, 1, 4096);
  Planner a = MakePlanner(mix, config);
  std::vector<uint64_t> hashes;
  std::optional<std::string> state;
  for (int s = 0; s < 6; ++s) {
    const std::string before = a.SaveState();
    auto plan = a.PlanStep();
    ASSERT_TRUE(plan.ok());
    hashes.push_back(plan->Hash());
    if (s == 2) {
      auto within = a.StateWithinStep(before, a.SaveState(), *plan, 3);
      ASSERT_TRUE(within.ok()) << within.status().ToString();
      state = *within;
    }
  }
  Planner b = MakePlanner(mix, config);
  auto resume = b.RestoreState(*state);
  ASSERT_TRUE(resume.ok()) << resume.status().ToString();
  EXPECT_EQ(resume->step, 2u);
  EXPECT_EQ(resume->micro_step, 3u);
  EXPECT_TRUE(resume->changed.empty());
  for (size_t s = 2; s < hashes.size(); ++s) EXPECT_EQ(b.PlanStep()->Hash(), hashes[s]);
}

TEST(PlannerElasticTest, RefusesAnotherStreamAndBadWithinStepArguments) {
  const Mix& mix = RealMix();
  const PlannerConfig config = ConfigOf(4, 2, 1, 1, 4096);
  Planner a = MakePlanner(mix, config);
  const std::string before = a.SaveState();
  auto plan = a.PlanStep();
  ASSERT_TRUE(plan.ok());
  const std::string after = a.SaveState();
  EXPECT_EQ(a.StateWithinStep(before, after, *plan, 0).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(a.StateWithinStep(before, after, *plan, 2).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(a.StateWithinStep(after, before, *plan, 1).status().code(),
            StatusCode::kInvalidArgument);
  auto within = a.StateWithinStep(before, after, *plan, 1);
  ASSERT_TRUE(within.ok());

  PlannerConfig other = config;
  other.seed = 12;
  Planner b = MakePlanner(mix, other);
  auto refused = b.RestoreState(*within);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("saved at seed 11, now seed 12"), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(b.next_step(), 0u);  // nothing restored

  // Every truncation of a within-step state is refused as corrupt, never read past its end.
  for (size_t n = 0; n < within->size(); n += 7) {
    EXPECT_EQ(b.RestoreState(within->substr(0, n)).status().code(), StatusCode::kCorrupt) << n;
  }
}

}  // namespace
}  // namespace mmpt::plan
