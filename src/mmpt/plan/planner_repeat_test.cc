// Each sample at most once per step (Planner's contract without allow_repeat): deferral when the
// stream wraps into the next epoch, corpora smaller than a step, allow_repeat, and resume across
// a wrap.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <utility>

#include "mmpt/corpora/real_corpora.h"
#include "mmpt/cost/presets.h"
#include "mmpt/plan/planner.h"
#include "mmpt/plan/sample_order.h"

namespace mmpt::plan {
namespace {

struct Corpus {
  cost::SampleTable table;
  cost::CostModel model;
  cost::CostedSamples costs;
};

Corpus Costed(cost::SampleTable table) {
  auto model = cost::CostModel::FromPresets(cost::Defaults::kVision, cost::Defaults::kLlm,
                                            cost::Defaults::kHardware);
  EXPECT_TRUE(model.ok());
  auto costs = cost::CostSamples(table, *model);
  EXPECT_TRUE(costs.ok());
  return Corpus{std::move(table), std::move(*model), std::move(*costs)};
}

// Text-only samples: tokens[s][i] for sample i of source s.
Corpus TextCorpus(const std::vector<std::vector<uint32_t>>& tokens) {
  cost::SampleTableBuilder builder;
  for (size_t s = 0; s < tokens.size(); ++s) {
    const uint32_t source = builder.AddSource(fmt::format("s{}", s));
    for (uint32_t t : tokens[s]) EXPECT_TRUE(builder.Add(source, t, {}).ok());
  }
  auto table = std::move(builder).Finish();
  EXPECT_TRUE(table.ok());
  return Costed(std::move(*table));
}

// `n` sizes of `min` to `max` tokens.
std::vector<uint32_t> RandomTokens(uint32_t n, uint32_t seed, uint32_t min, uint32_t max) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> tokens(n);
  for (uint32_t& t : tokens) t = min + rng() % (max - min + 1);
  return tokens;
}

Layout MakeLayout(uint32_t dp, uint32_t cp, uint32_t ga, uint32_t mbs, uint32_t seq_len) {
  Layout l;
  l.dp = dp;
  l.ep = 1;
  l.cp = cp;
  l.ga = ga;
  l.mbs = mbs;
  l.seq_len = seq_len;
  return l;
}

// What a run of CheckedRun saw.
struct RunTally {
  uint64_t drawn = 0;
  uint64_t deferred = 0;
  uint64_t short_steps = 0;   // steps cut short by an exhausted source
  uint64_t halved_steps = 0;  // of them, steps whose pool made fewer packs than the step has
  uint64_t max_carried = 0;
};

// Plan until `epochs` times the corpus is drawn (at most `max_steps` steps) and check every
// step: no (source, index) twice, no empty pack; then that nothing was lost or repeated
// overall: each draw the stream made is placed once or still carried, or dropped (listed in
// its step's StepPlan::dropped, in draw order).
RunTally CheckedRun(const Corpus& c, const PlannerConfig& config, double epochs,
                    int max_steps = 1000) {
  RunTally tally;
  auto planner = Planner::Create(c.table, c.model, config);
  EXPECT_TRUE(planner.ok()) << planner.status().ToString();
  if (!planner.ok()) return tally;
  std::map<uint64_t, int> placed;  // row → times placed or carried
  std::vector<uint64_t> dropped;   // rows, in draw order
  for (int step = 0; step < max_steps && tally.drawn < epochs * c.table.num_samples(); ++step) {
    auto plan = planner->PlanStep();
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) return tally;
    EXPECT_TRUE(plan->Validate().ok()) << plan->Validate().ToString();
    std::set<std::pair<uint32_t, uint64_t>> in_step;
    for (const PlannedSequence& s : plan->sequences) {
      EXPECT_TRUE(in_step.emplace(s.source, s.index).second)
          << "step " << step << " holds " << s.source << ":" << s.index << " twice";
      ++placed[c.table.source_begin[s.source] + s.index];
    }
    for (const PlannedPack& p : plan->packs) {
      EXPECT_LT(p.sequence_begin, p.sequence_end) << "step " << step << ": an empty pack";
    }
    for (const SampleId& d : plan->dropped) {
      dropped.push_back(c.table.source_begin[d.source] + d.index);
    }
    const StepStats& st = planner->last_stats();
    EXPECT_EQ(plan->dropped.size(), st.dropped);
    tally.drawn += st.drawn;
    tally.deferred += st.deferred;
    tally.short_steps += st.source_exhausted;
    tally.halved_steps += st.candidate_packs < st.packs;
    tally.max_carried = std::max<uint64_t>(tally.max_carried, st.carried);
  }
  // Deferred draws wait, but the stream never runs away from the packs: a sample has a few
  // copies waiting at most, however many steps run.
  EXPECT_LE(tally.max_carried, 3 * c.table.num_samples() + config.layout.packs_per_step());
  for (const PlacedSample& s : planner->carried()) ++placed[s.row];
  std::vector<uint64_t> sizes;
  for (size_t s = 0; s < c.table.num_sources(); ++s) sizes.push_back(c.table.source_size(s));
  auto order = SampleOrder::Create(sizes, config.source_weights, config.seed);
  EXPECT_TRUE(order.ok());
  std::map<uint64_t, int> expected;
  std::vector<uint64_t> expected_dropped;
  for (uint64_t k = 0; k < tally.drawn; ++k) {
    SampleOrder::Draw d = order->Next();
    const uint64_t row = c.table.source_begin[d.source] + d.index;
    if (!pack::FitToLength(c.table.text_tokens[row], c.costs.image_tokens[row],
                           config.layout.seq_len, config.overlong)
             .dropped) {
      ++expected[row];
    } else {
      expected_dropped.push_back(row);
    }
  }
  EXPECT_EQ(placed, expected);
  EXPECT_EQ(dropped, expected_dropped);
  return tally;
}

// Create rejects `config` on `c` with an InvalidArgument holding `says` and the fix.
void ExpectRejected(const Corpus& c, const PlannerConfig& config, const std::string& says) {
  auto planner = Planner::Create(c.table, c.model, config);
  ASSERT_FALSE(planner.ok());
  EXPECT_EQ(planner.status().code(), StatusCode::kInvalidArgument);
  const std::string message(planner.status().message());
  EXPECT_NE(message.find(says), std::string::npos) << message;
  EXPECT_NE(message.find("--allow-repeat"), std::string::npos) << message;
}

TEST(PlannerRepeatTest, TinyCorporaHoldEachSampleOncePerStepAcrossEveryEpoch) {
  // 4, 16, 1, 4 and 3 packs of 16 tokens; samples are 3–16 tokens.
  const Layout layouts[] = {MakeLayout(2, 2, 2, 1, 16), MakeLayout(4, 1, 4, 1, 16),
                            MakeLayout(1, 1, 1, 1, 16), MakeLayout(2, 1, 1, 2, 16),
                            MakeLayout(3, 1, 1, 1, 16)};
  uint64_t deferred = 0;
  int too_few_samples = 0, too_few_tokens = 0, planned = 0;
  for (uint32_t size : {3u, 7u, 20u}) {
    for (bool with_long : {false, true}) {
      // With an over-long first sample, dropped by the 'drop' policy every time it is drawn.
      std::vector<uint32_t> tokens = RandomTokens(size, size, 3, 16);
      if (with_long) tokens[0] = 40;
      Corpus c = TextCorpus({tokens});
      const uint64_t fit = size - (with_long ? 1 : 0);
      const uint64_t fit_tokens =
          std::accumulate(tokens.begin(), tokens.end(), uint64_t{0}) - (with_long ? 40 : 0);
      for (const Layout& layout : layouts) {
        PlannerConfig config;
        config.layout = layout;
        config.overlong = with_long ? pack::OverlongPolicy::kDrop : pack::OverlongPolicy::kTruncate;
        config.seed = size + layout.dp;
        SCOPED_TRACE(fmt::format("{} samples (long {}), dp {} cp {} ga {} mbs {}", size, with_long,
                                 layout.dp, layout.cp, layout.ga, layout.mbs));
        const uint64_t packs = layout.packs_per_step();
        if (fit < packs) {
          ExpectRejected(c, config,
                         fmt::format("step needs {} packs (dp {} × ga {} × mbs {}) but the "
                                     "corpus has {} samples that fit",
                                     packs, layout.dp, layout.ga, layout.mbs, fit));
          ++too_few_samples;
        } else if (fit_tokens < packs * layout.seq_len * (1 + config.pool_slack)) {
          ExpectRejected(c, config, fmt::format("but the corpus has {},", size));
          ++too_few_tokens;
        } else {
          RunTally t = CheckedRun(c, config, 6.0);
          EXPECT_GE(t.drawn, 6 * size);  // six epochs: six boundaries crossed
          deferred += t.deferred;
          ++planned;
        }
      }
    }
  }
  EXPECT_GT(too_few_samples, 0);
  EXPECT_GT(too_few_tokens, 0);
  EXPECT_GT(planned, 10);
  EXPECT_GT(deferred, 0u);  // draws were deferred at a wrap
}

TEST(PlannerRepeatTest, CocoCaptionsHoldEachSampleOncePerStepOverEpochs) {
  auto table = corpora::CocoCaptionsCorpus();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  Corpus c = Costed(std::move(*table));
  // ~1,200 and ~600 caption pairs a step: 21 and 42 steps an epoch.
  for (Layout layout : {MakeLayout(8, 1, 8, 1, 8192), MakeLayout(4, 2, 4, 2, 8192)}) {
    SCOPED_TRACE(
        fmt::format("dp {} cp {} ga {} mbs {}", layout.dp, layout.cp, layout.ga, layout.mbs));
    PlannerConfig config;
    config.layout = layout;
    config.seed = 11;
    RunTally t = CheckedRun(c, config, 2.2);
    EXPECT_GE(t.drawn, 2 * c.table.num_samples());
    EXPECT_GT(t.deferred, 0u);
  }
}

TEST(PlannerRepeatTest, AllowRepeatPlansACorpusSmallerThanAStep) {
  Corpus c = TextCorpus({RandomTokens(3, 4, 8, 40)});
  PlannerConfig config;
  config.layout = MakeLayout(2, 1, 2, 2, 64);
  ExpectRejected(c, config, "step needs 8 packs (dp 2 × ga 2 × mbs 2) but the corpus has 3");
  config.allow_repeat = true;
  auto planner = Planner::Create(c.table, c.model, config);
  ASSERT_TRUE(planner.ok()) << planner.status().ToString();
  for (int step = 0; step < 3; ++step) {
    auto plan = planner->PlanStep();
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_TRUE(plan->Validate().ok());
    std::set<uint64_t> distinct;
    for (const PlannedSequence& s : plan->sequences) distinct.insert(s.index);
    EXPECT_GT(plan->sequences.size(), distinct.size());  // 8 packs of 3 samples: repeats
    for (const PlannedPack& p : plan->packs) EXPECT_LT(p.sequence_begin, p.sequence_end);
  }
  // Every sample dropped is an error either way.
  config.layout.seq_len = 4;
  config.overlong = pack::OverlongPolicy::kDrop;
  EXPECT_NE(Planner::Create(c.table, c.model, config)
                .status()
                .message()
                .find("every sample of the corpus is dropped"),
            std::string::npos);
}

TEST(PlannerRepeatTest, ASourceWeightedBeyondItsSizeNeedsAllowRepeat) {
  // Source s1 has 3 samples at half the draws; a step of 8 packs takes ~20 samples.
  Corpus c = TextCorpus({RandomTokens(200, 5, 8, 40), RandomTokens(3, 6, 8, 40)});
  PlannerConfig config;
  config.layout = MakeLayout(2, 1, 2, 2, 64);
  config.source_weights = {0.5, 0.5};
  ExpectRejected(c, config, "of them from source 's1' by its weight, but the source has 3");
  config.allow_repeat = true;
  auto repeating = Planner::Create(c.table, c.model, config);
  ASSERT_TRUE(repeating.ok());
  EXPECT_TRUE(repeating->PlanStep().ok());
  // Weights in proportion to size never ask for more than a source has.
  config.allow_repeat = false;
  config.source_weights.clear();
  EXPECT_GE(CheckedRun(c, config, 3.0).drawn, 3 * c.table.num_samples());
}

// A 2-sample source at a fifth of the draws, steps of about 5 draws: on average a step asks for
// one of its samples, so Create accepts it, but some steps draw it again while holding both.
// Those steps end short of their tokens once they have a sample per pack (halving packs when
// they have too few), with every sample still once per step and none lost.
TEST(PlannerRepeatTest, NearTheLimitAStepEndsShortRatherThanRepeat) {
  Corpus c = TextCorpus({RandomTokens(40, 1, 3, 16), RandomTokens(2, 2, 3, 16)});
  RunTally total;
  for (uint32_t dp : {3u, 4u}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(fmt::format("dp {} seed {}", dp, seed));
      PlannerConfig config;
      config.layout = MakeLayout(dp, 1, 1, 1, 16);
      config.source_weights = {0.8, 0.2};
      config.seed = seed;
      RunTally t = CheckedRun(c, config, 30.0);
      total.short_steps += t.short_steps;
      total.halved_steps += t.halved_steps;
    }
  }
  EXPECT_GT(total.short_steps, 0u);
  EXPECT_GT(total.halved_steps, 0u);
}

// Five samples of 250 tokens, two packs of 100 a step: the stream runs about an epoch a step,
// and the 50-token sample rarely fits the fullest packs, so its copies from later epochs are
// deferred step after step. The oldest copy joins each pool and ages into a kept pack: over
// hundreds of steps the carry stays a few samples (were the youngest to join, it would grow
// by a sample a step).
TEST(PlannerRepeatTest, DeferredCopiesAgeIntoPacksAndTheCarryStaysBounded) {
  Corpus c = TextCorpus({{60, 40, 30, 70, 50}});
  for (uint64_t seed : {1u, 2u, 3u}) {
    PlannerConfig config;
    config.layout = MakeLayout(2, 1, 1, 1, 100);
    config.seed = seed;
    RunTally t = CheckedRun(c, config, 300.0);
    EXPECT_GE(t.drawn, 300u * 5);
    EXPECT_GT(t.deferred, 0u);
  }
}

TEST(PlannerRepeatTest, ResumeAcrossAWrapGivesTheSamePlans) {
  int across_a_deferral = 0;
  for (uint32_t size : {7u, 20u}) {
    SCOPED_TRACE(fmt::format("{} samples", size));
    Corpus c = TextCorpus({RandomTokens(size, 9, 3, 16)});
    PlannerConfig config;
    config.layout = MakeLayout(1, 2, 2, 1, 16);
    constexpr int kSteps = 24;
    auto reference = Planner::Create(c.table, c.model, config);
    ASSERT_TRUE(reference.ok());
    std::vector<uint64_t> hashes;
    std::vector<std::string> states;  // before each step
    std::vector<uint64_t> deferred;   // carried in by each step
    for (int s = 0; s < kSteps; ++s) {
      states.push_back(reference->SaveState());
      auto plan = reference->PlanStep();
      ASSERT_TRUE(plan.ok());
      hashes.push_back(plan->Hash());
      deferred.push_back(reference->last_stats().deferred);
    }
    for (int k = 1; k < kSteps; ++k) {
      auto resumed = Planner::Create(c.table, c.model, config);
      ASSERT_TRUE(resumed.ok());
      ASSERT_TRUE(resumed->RestoreState(states[k]).ok());
      across_a_deferral += deferred[k - 1] > 0;
      for (int s = k; s < kSteps; ++s) {
        auto plan = resumed->PlanStep();
        ASSERT_TRUE(plan.ok());
        ASSERT_EQ(plan->Hash(), hashes[s]) << "restored before step " << k << ", step " << s;
      }
    }
  }
  EXPECT_GT(across_a_deferral, 0);  // some restore carried deferred draws in
}

}  // namespace
}  // namespace mmpt::plan
