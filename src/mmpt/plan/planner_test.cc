#include "mmpt/plan/planner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <random>
#include <set>

#include "mmpt/cp/pack_load.h"
#include "mmpt/plan/cp_stage.h"
#include "mmpt/plan/permutation.h"
#include "mmpt/plan/sample_order.h"
#include "mmpt/plan/vanilla.h"

namespace mmpt::plan {
namespace {

TEST(PermutationTest, IsABijectionForAnySize) {
  for (uint64_t n : {1ull, 2ull, 3ull, 4ull, 5ull, 17ull, 1000ull, 65537ull}) {
    Permutation perm(n, 42);
    std::vector<uint8_t> seen(n, 0);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t v = perm.At(i);
      ASSERT_LT(v, n);
      ASSERT_EQ(seen[v]++, 0) << "n " << n << " value " << v;
      ASSERT_EQ(perm.Inverse(v), i) << "n " << n << " value " << v;
    }
  }
}

// DrawnSince answers from the permutations alone what a set of every sample drawn since would.
TEST(SampleOrderTest, DrawnSinceIsWhetherTheStreamDrewTheSampleSince) {
  auto order = SampleOrder::Create(std::vector<uint64_t>{5, 37, 1000}, {}, 7);
  ASSERT_TRUE(order.ok());
  for (int skip = 0; skip < 300; skip += 97) {
    for (int k = 0; k < skip; ++k) order->Next();
    const std::vector<SourceCursor> since = order->cursors();
    std::set<std::pair<uint32_t, uint64_t>> drawn;
    size_t repeats = 0;
    for (int k = 0; k < 1500; ++k) {
      const SampleOrder::Draw draw = order->Next();
      const bool seen = !drawn.insert({draw.source, draw.index}).second;
      ASSERT_EQ(order->DrawnSince(since, draw), seen)
          << "draw " << k << " of source " << draw.source;
      repeats += seen;
    }
    EXPECT_GT(repeats, 100u);  // the small sources wrapped, several times
  }
}

TEST(PermutationTest, KeysGiveDifferentOrdersAndTheSameKeyTheSame) {
  Permutation a(10000, 1), b(10000, 2), c(10000, 1);
  size_t same = 0, fixed = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    same += a.At(i) == b.At(i);
    fixed += a.At(i) == i;
    EXPECT_EQ(a.At(i), c.At(i));
  }
  EXPECT_LT(same, 50u);  // ~1 expected for independent permutations
  EXPECT_LT(fixed, 50u);
}

TEST(SampleOrderTest, BlendsByWeightAndWalksEachSourceOncePerEpoch) {
  std::vector<uint64_t> sizes = {1000, 300, 50};
  std::vector<double> weights = {0.5, 0.3, 0.2};
  auto order = SampleOrder::Create(sizes, weights, 7);
  ASSERT_TRUE(order.ok());
  std::vector<std::map<uint64_t, int>> seen(3);
  std::vector<int> count(3, 0);
  for (int k = 0; k < 10000; ++k) {
    auto d = order->Next();
    ++count[d.source];
    ASSERT_LT(d.index, sizes[d.source]);
    ++seen[d.source][d.index];
  }
  EXPECT_NEAR(count[0], 5000, 2);  // stride scheduling: within one draw of the exact share
  EXPECT_NEAR(count[1], 3000, 2);
  EXPECT_NEAR(count[2], 2000, 2);
  // Source 2 (50 samples) went through 40 epochs: every sample exactly 40 times.
  for (auto& [index, times] : seen[2]) EXPECT_EQ(times, 40) << index;
  EXPECT_EQ(seen[2].size(), 50u);
}

TEST(SampleOrderTest, RestoreContinuesTheSameStream) {
  std::vector<uint64_t> sizes = {10, 1000, 7};
  auto a = SampleOrder::Create(sizes, {}, 3);
  ASSERT_TRUE(a.ok());
  for (int k = 0; k < 777; ++k) a->Next();
  auto b = SampleOrder::Create(sizes, {}, 3);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->Restore(a->cursors()).ok());
  for (int k = 0; k < 2000; ++k) {
    auto x = a->Next(), y = b->Next();
    ASSERT_EQ(x.source, y.source);
    ASSERT_EQ(x.index, y.index);
  }
  std::vector<SourceCursor> bad(3);
  bad[1].position = 5000;
  EXPECT_FALSE(b->Restore(bad).ok());
  EXPECT_FALSE(SampleOrder::Create(sizes, std::vector<double>{1, -1, 1}, 0).ok());
  EXPECT_FALSE(SampleOrder::Create(sizes, std::vector<double>{0, 0, 0}, 0).ok());
  EXPECT_FALSE(SampleOrder::Create(sizes, std::vector<double>{1, 1}, 0).ok());
}

// A random mix: captions with one image, documents with several, text-only documents, some
// longer than the sequence length.
struct RandomCorpus {
  cost::SampleTable table;
  cost::CostModel model;
  cost::CostedSamples costs;
};

RandomCorpus MakeCorpus(uint32_t seed, size_t n) {
  std::mt19937 engine(seed);
  auto rng = [&]() -> uint32_t { return static_cast<uint32_t>(engine()); };
  cost::SampleTableBuilder builder;
  uint32_t sources[3] = {builder.AddSource("captions"), builder.AddSource("docs"),
                         builder.AddSource("text")};
  std::vector<cost::ImageSize> images;
  for (size_t i = 0; i < n; ++i) {
    uint32_t kind = rng() % 3;
    images.clear();
    uint32_t text = 0;
    if (kind == 0) {
      text = 10 + rng() % 40;
      images.push_back({200 + rng() % 800, 200 + rng() % 800});
    } else if (kind == 1) {
      text = 100 + rng() % 1500;
      for (uint32_t k = rng() % 5; k > 0; --k)
        images.push_back({100 + rng() % 1400, 100 + rng() % 1400});
    } else {
      text = 50 + rng() % 6000;
    }
    EXPECT_TRUE(builder.Add(sources[kind], text, images).ok());
  }
  auto table = std::move(builder).Finish();
  auto model = cost::CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  EXPECT_TRUE(table.ok() && model.ok());
  auto costs = cost::CostSamples(*table, *model);
  EXPECT_TRUE(costs.ok());
  return RandomCorpus{std::move(*table), std::move(*model), std::move(*costs)};
}

PlannerConfig SmallConfig(uint64_t seed) {
  PlannerConfig config;
  config.layout.seq_len = 4096;
  config.layout.dp = 8;
  config.layout.ep = 4;
  config.layout.ga = 4;
  config.layout.mbs = 2;
  config.seed = seed;
  return config;
}

class PlannerPropertyTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(PlannerPropertyTest, EverySampleIsPlacedOnceCarriedOrDropped) {
  RandomCorpus c = MakeCorpus(GetParam(), 3000);
  for (auto overlong : {pack::OverlongPolicy::kTruncate, pack::OverlongPolicy::kDrop}) {
    PlannerConfig config = SmallConfig(GetParam());
    config.overlong = overlong;
    config.max_images_per_pack = 12;
    auto planner = Planner::Create(c.table, c.model, config);
    ASSERT_TRUE(planner.ok());
    std::map<uint64_t, int> placed;      // row → times placed
    std::vector<uint64_t> dropped_rows;  // StepPlan::dropped of every step, in order
    uint64_t drawn = 0, dropped = 0;
    for (int step = 0; step < 6; ++step) {
      auto plan = planner->PlanStep();
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      ASSERT_TRUE(plan->Validate().ok()) << plan->Validate().ToString();
      EXPECT_EQ(plan->step, static_cast<uint64_t>(step));
      for (const PlannedSequence& s : plan->sequences) {
        ++placed[c.table.source_begin[s.source] + s.index];
        EXPECT_LE(s.tokens, config.layout.seq_len);
      }
      for (const PlannedPack& p : plan->packs) EXPECT_LE(p.images, 12u);
      for (const SampleId& d : plan->dropped) {
        dropped_rows.push_back(c.table.source_begin[d.source] + d.index);
      }
      drawn += planner->last_stats().drawn;
      dropped += planner->last_stats().dropped;
      EXPECT_GE(planner->last_stats().efficiency, 0.97);
    }
    for (const auto& s : planner->carried()) ++placed[s.row];
    // Replay the stream: every drawn sample that the policy keeps is placed or carried, once.
    std::vector<uint64_t> sizes = {c.table.source_size(0), c.table.source_size(1),
                                   c.table.source_size(2)};
    auto order = SampleOrder::Create(sizes, {}, config.seed);
    ASSERT_TRUE(order.ok());
    std::map<uint64_t, int> expected;
    std::vector<uint64_t> expected_dropped;
    for (uint64_t k = 0; k < drawn; ++k) {
      auto d = order->Next();
      uint64_t row = c.table.source_begin[d.source] + d.index;
      auto fit = pack::FitToLength(c.table.text_tokens[row], c.costs.image_tokens[row],
                                   config.layout.seq_len, overlong);
      if (fit.dropped || c.table.ImagesOf(row).size() > 12) {
        expected_dropped.push_back(row);
      } else {
        ++expected[row];
      }
    }
    EXPECT_EQ(dropped, expected_dropped.size());
    EXPECT_EQ(dropped_rows, expected_dropped);
    EXPECT_EQ(placed, expected);
  }
}

TEST_P(PlannerPropertyTest, PlansAreIdenticalAcrossRunsAndRestorePoints) {
  RandomCorpus c = MakeCorpus(GetParam() + 10, 2000);
  PlannerConfig config = SmallConfig(GetParam());
  config.layout.sync = SyncModel::kMicrostep;
  auto run = [&](const cost::SampleTable& table, int steps) {
    auto planner = Planner::Create(table, c.model, config);
    EXPECT_TRUE(planner.ok());
    std::vector<uint64_t> hashes;
    for (int s = 0; s < steps; ++s) hashes.push_back(planner->PlanStep()->Hash());
    return hashes;
  };
  std::vector<uint64_t> reference = run(c.table, 8);
  EXPECT_EQ(run(c.table, 8), reference);
  // The same bytes read back as a planning file would be (a copy at another address).
  auto copy =
      std::make_shared<std::vector<std::byte>>(c.table.bytes().begin(), c.table.bytes().end());
  auto reread = cost::SampleTable::FromBytes(copy, *copy, "copy");
  ASSERT_TRUE(reread.ok()) << reread.status().ToString();
  EXPECT_EQ(run(*reread, 8), reference);
  EXPECT_EQ(std::set<uint64_t>(reference.begin(), reference.end()).size(), reference.size());
  // Each step in the memory of the one before (PlanStep's `recycled`, with room to spare): the
  // same plans, in the same arrays.
  {
    auto planner = Planner::Create(c.table, c.model, config);
    ASSERT_TRUE(planner.ok());
    StepPlan last;
    for (int s = 0; s < 8; ++s) {
      last.sequences.reserve(2 * last.sequences.size() + 64);
      const PlannedSequence* memory = last.sequences.data();
      auto plan = planner->PlanStep(std::move(last));
      ASSERT_TRUE(plan.ok());
      EXPECT_EQ(plan->Hash(), reference[s]) << "step " << s;
      if (s > 0) {
        EXPECT_EQ(plan->sequences.data(), memory) << "step " << s;
      }
      last = std::move(*plan);
    }
  }

  for (int k : {1, 3, 6}) {
    auto first = Planner::Create(c.table, c.model, config);
    ASSERT_TRUE(first.ok());
    for (int s = 0; s < k; ++s) ASSERT_TRUE(first->PlanStep().ok());
    std::string state = first->SaveState();
    EXPECT_LT(state.size(), 4096u) << "state after " << k << " steps";
    auto resumed = Planner::Create(c.table, c.model, config);
    ASSERT_TRUE(resumed.ok());
    ASSERT_TRUE(resumed->RestoreState(state).ok());
    EXPECT_EQ(resumed->next_step(), static_cast<uint64_t>(k));
    for (int s = k; s < 8; ++s) {
      auto plan = resumed->PlanStep();
      ASSERT_TRUE(plan.ok());
      EXPECT_EQ(plan->Hash(), reference[s]) << "restored at " << k << ", step " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, PlannerPropertyTest, ::testing::Values(1u, 2u, 3u));

// The state of a planner of `config` on `c` after one step.
std::string StateAfterOneStep(const RandomCorpus& c, const PlannerConfig& config) {
  auto planner = Planner::Create(c.table, c.model, config);
  EXPECT_TRUE(planner.ok() && planner->PlanStep().ok());
  return planner.ok() ? planner->SaveState() : std::string();
}

TEST(PlannerTest, StateRejectsCorruptionAndOtherConfigs) {
  RandomCorpus c = MakeCorpus(5, 500);
  PlannerConfig config = SmallConfig(1);
  auto planner = Planner::Create(c.table, c.model, config);
  ASSERT_TRUE(planner.ok());
  std::string state = StateAfterOneStep(c, config);
  std::string flipped = state;
  flipped[20] ^= 1;
  EXPECT_EQ(planner->RestoreState(flipped).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(planner->RestoreState(state.substr(0, 10)).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(planner->RestoreState("").status().code(), StatusCode::kCorrupt);
  config.seed = 2;
  auto other = Planner::Create(c.table, c.model, config);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->RestoreState(state).status().code(), StatusCode::kInvalidArgument);
}

TEST(PlannerTest, StateUnderAnotherLayoutResumesAndSaysWhatChanged) {
  RandomCorpus c = MakeCorpus(5, 2000);  // fills a step of the doubled layout
  PlannerConfig config = SmallConfig(1);
  const std::string state = StateAfterOneStep(c, config);
  const uint32_t saved_dp = config.layout.dp;
  const uint32_t saved_seq_len = config.layout.seq_len;
  config.layout.dp = saved_dp * 2;
  config.layout.seq_len = saved_seq_len * 2;
  auto other = Planner::Create(c.table, c.model, config);
  ASSERT_TRUE(other.ok());
  auto resume = other->RestoreState(state);
  ASSERT_TRUE(resume.ok()) << resume.status().ToString();
  EXPECT_EQ(resume->step, 1u);
  EXPECT_EQ(resume->micro_step, 0u);
  EXPECT_EQ(
      resume->changed,
      (std::vector<std::string>{fmt::format("dp {} → {}", saved_dp, saved_dp * 2),
                                fmt::format("seq_len {} → {}", saved_seq_len, saved_seq_len * 2)}));
  EXPECT_EQ(other->next_step(), 1u);
  EXPECT_TRUE(other->PlanStep().ok());
}

TEST(PlannerTest, ImpossibleInputsGetClearErrors) {
  RandomCorpus c = MakeCorpus(6, 200);
  PlannerConfig config = SmallConfig(1);
  config.layout.ep = 3;  // dp 8 not divisible by 3
  auto bad = Planner::Create(c.table, c.model, config);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not divisible by ep"), std::string::npos);
  // Every sample too long and the drop policy: a clear error, not an endless loop.
  cost::SampleTableBuilder builder;
  uint32_t s = builder.AddSource("long");
  ASSERT_TRUE(builder.Add(s, 9000, {}).ok());
  auto table = std::move(builder).Finish();
  ASSERT_TRUE(table.ok());
  config = SmallConfig(1);
  config.overlong = pack::OverlongPolicy::kDrop;
  auto planner = Planner::Create(*table, c.model, config);
  ASSERT_FALSE(planner.ok());
  EXPECT_NE(planner.status().message().find("every sample"), std::string::npos);
  config.source_weights = {1, 2};
  EXPECT_FALSE(Planner::Create(*table, c.model, config).ok());
}

// The case: one image of 3600×3700 (about 16k tokens under Qwen2.5-VL) in a corpus
// planned at seq_len 8192 never enters a pack; each step that draws it names it in
// StepPlan::dropped and counts it in StepStats::dropped, once per draw.
TEST(PlannerTest, AnImageLongerThanAPackIsDroppedAndNamedByTheStepThatDrewIt) {
  cost::SampleTableBuilder builder;
  const uint32_t coco = builder.AddSource("coco");
  constexpr uint64_t kHuge = 17;
  for (uint64_t i = 0; i < 40; ++i) {
    const std::vector<cost::ImageSize> image = {i == kHuge ? cost::ImageSize{3600, 3700}
                                                           : cost::ImageSize{640, 480}};
    ASSERT_TRUE(builder.Add(coco, 20, image).ok());
  }
  auto table = std::move(builder).Finish();
  auto model = cost::CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  ASSERT_TRUE(table.ok() && model.ok());
  auto costs = cost::CostSamples(*table, *model);
  ASSERT_TRUE(costs.ok());
  ASSERT_GT(costs->image_tokens[kHuge], 8192u);
  PlannerConfig config;
  config.layout.seq_len = 8192;
  config.overlong = pack::OverlongPolicy::kDrop;
  auto planner = Planner::Create(*table, *model, config);
  ASSERT_TRUE(planner.ok()) << planner.status().ToString();
  uint64_t drawn = 0, dropped = 0;
  while (drawn < 3 * 40) {  // three epochs: the huge sample is drawn three times at least
    auto plan = planner->PlanStep();
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    drawn += planner->last_stats().drawn;
    EXPECT_EQ(plan->dropped.size(), planner->last_stats().dropped);
    for (const SampleId& d : plan->dropped) EXPECT_EQ(d, (SampleId{coco, kHuge}));
    for (const PlannedSequence& s : plan->sequences) EXPECT_NE(s.index, kHuge);
    dropped += plan->dropped.size();
  }
  auto order = SampleOrder::Create(std::vector<uint64_t>{40}, {}, config.seed);
  ASSERT_TRUE(order.ok());
  uint64_t huge_draws = 0;
  for (uint64_t k = 0; k < drawn; ++k) huge_draws += order->Next().index == kHuge;
  EXPECT_GE(huge_draws, 3u);
  EXPECT_EQ(dropped, huge_draws);
}

TEST(VanillaTest, PacksEachRanksShareAndBalancesNothing) {
  RandomCorpus c = MakeCorpus(8, 3000);
  PlannerConfig config = SmallConfig(3);
  config.vanilla_buffer = 64;
  auto vanilla = VanillaPlanner::Create(c.table, c.model, config);
  auto mmpt = Planner::Create(c.table, c.model, config);
  ASSERT_TRUE(vanilla.ok() && mmpt.ok());
  double vanilla_ratio = 0, mmpt_ratio = 0, vanilla_eff = 0, mmpt_eff = 0;
  for (int s = 0; s < 4; ++s) {
    auto v = vanilla->PlanStep();
    auto m = mmpt->PlanStep();
    ASSERT_TRUE(v.ok() && m.ok());
    ASSERT_TRUE(v->Validate().ok());
    vanilla_ratio += v->estimate.step_seconds / v->estimate.lower_bound_seconds;
    mmpt_ratio += m->estimate.step_seconds / m->estimate.lower_bound_seconds;
    vanilla_eff += vanilla->last_stats().efficiency;
    mmpt_eff += mmpt->last_stats().efficiency;
  }
  EXPECT_GT(vanilla_ratio, mmpt_ratio);
  EXPECT_GT(mmpt_eff, vanilla_eff);
}

// Plan 3 steps of SmallConfig(seed) at CP 2 under `policy`, handing each valid plan to `check`.
template <typename Check>
void ForCpPlans(const RandomCorpus& c, uint64_t seed, cp::VisionPolicy policy, Check check) {
  PlannerConfig config = SmallConfig(seed);
  config.layout.cp = 2;
  config.cp_vision = policy;
  auto planner = Planner::Create(c.table, c.model, config);
  ASSERT_TRUE(planner.ok()) << planner.status().ToString();
  for (int s = 0; s < 3; ++s) {
    auto plan = planner->PlanStep();
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_TRUE(plan->Validate().ok()) << plan->Validate().ToString();
    check(*plan);
  }
}

TEST(PlannerCpTest, UnderCpTheBalancerEvensOutEachPacksMostLoadedRank) {
  RandomCorpus c = MakeCorpus(9, 4000);
  for (cp::VisionPolicy policy : {cp::VisionPolicy::kNaive, cp::VisionPolicy::kCost}) {
    bool duplicated = false;
    ForCpPlans(c, 5, policy, [&](const StepPlan& plan) {
      // The plan's estimate is of the cost each pack's CP group pays, as its cp stage splits
      // and assigns it: the balancer's input.
      const auto costs = CpPackCosts(plan, c.model.AttentionPairWeight());
      std::vector<uint32_t> slots(costs.size());
      std::iota(slots.begin(), slots.end(), 0);
      EXPECT_DOUBLE_EQ(plan.estimate.step_seconds,
                       balance::Evaluate(costs, slots, plan.layout.BalanceGrid()).step_seconds);
      for (size_t p = 0; p < costs.size(); ++p) {
        // Never below the pack's share; naive encodes an image that straddles on both ranks.
        const auto& ranks = plan.cp[p].vision.rank_cost;
        const double encoded = std::accumulate(ranks.begin(), ranks.end(), 0.0);
        EXPECT_GE(costs[p].vision(), encoded / 2 * (1 - 1e-12));
        EXPECT_GE(encoded, plan.packs[p].vision_seconds * (1 - 1e-9));
        duplicated |= encoded > plan.packs[p].vision_seconds * (1 + 1e-9);
      }
    });
    EXPECT_EQ(duplicated, policy == cp::VisionPolicy::kNaive);
  }
}

TEST(PlannerCpTest, NaiveCpPadsASampleWhereKeepingItsImagesWholePays) {
  RandomCorpus c = MakeCorpus(10, 4000);
  for (cp::VisionPolicy policy : {cp::VisionPolicy::kNaive, cp::VisionPolicy::kCost}) {
    size_t padded = 0;
    ForCpPlans(c, 6, policy, [&](const StepPlan& plan) {
      const SamplePadding rule(c.table, c.model, plan.layout, policy);
      for (size_t p = 0; p < plan.packs.size(); ++p) {
        uint32_t room = 0;
        for (size_t q = 0; q < plan.Sequences(plan.packs[p]).size(); ++q) {
          const PlannedSequence& seq = plan.Sequences(plan.packs[p])[q];
          room += seq.tokens + seq.cp_padding;
          // The cp stage pads the sequence as the plan says.
          const cp::ThdSplit& split = plan.cp[p].split;
          const uint32_t base = (seq.tokens + 3) / 4 * 4;
          EXPECT_EQ(split.cu_seqlens_padded[q + 1] - split.cu_seqlens_padded[q],
                    base + seq.cp_padding);
          if (seq.cp_padding == 0) continue;
          ++padded;
          EXPECT_EQ(seq.cp_padding % 4, 0u);
          EXPECT_LE(seq.cp_padding, seq.tokens);
          // Padded only where the encoder work it saves outweighs the tokens it takes.
          std::vector<cp::CpImage> items;
          for (const PlannedImage& image : plan.Images(seq)) {
            items.push_back(
                {image.token_start, image.llm_tokens, c.model.VisionSeconds(image.vision_flops)});
          }
          EXPECT_LT(cp::NaiveSequenceCost(base + seq.cp_padding, 2, items) +
                        rule.seconds_per_token() * seq.cp_padding,
                    cp::NaiveSequenceCost(base, 2, items));
        }
        EXPECT_LE(room, plan.layout.seq_len);
      }
    });
    EXPECT_EQ(padded > 0, policy == cp::VisionPolicy::kNaive) << padded;
  }
}

}  // namespace
}  // namespace mmpt::plan
