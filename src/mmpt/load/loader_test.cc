#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "mmpt/comm/in_process.h"
#include "mmpt/load/loader.h"
#include "mmpt/plan/cp_stage.h"

namespace mmpt::load {
namespace {

// Plans where sample indices say where they sit: step s, DP rank r, micro-step m, sample j has
// index s·1000 + r·100 + m·10 + j; every first sample of a pack has one image of 4 tokens. The
// plan of step s dropped s mod 3 samples (over-long, never placed).
std::shared_ptr<const plan::StepPlan> MakePlan(uint64_t step, uint32_t dp, uint32_t ga,
                                               uint32_t cp = 1) {
  auto plan = std::make_shared<plan::StepPlan>();
  plan->step = step;
  plan->layout.dp = dp;
  plan->layout.ga = ga;
  plan->layout.cp = cp;
  plan->layout.seq_len = 64;
  for (uint32_t r = 0; r < dp; ++r) {
    for (uint32_t m = 0; m < ga; ++m) {
      plan::PlannedPack pack;
      pack.sequence_begin = static_cast<uint32_t>(plan->sequences.size());
      for (uint32_t j = 0; j < 3; ++j) {
        plan::PlannedSequence seq;
        seq.index = step * 1000 + r * 100 + m * 10 + j;
        seq.source = j % 2;
        seq.tokens = 10 + j + static_cast<uint32_t>(step % 3);
        seq.text_tokens = seq.tokens;
        seq.image_begin = seq.image_end = static_cast<uint32_t>(plan->images.size());
        if (j == 0) {
          plan::PlannedImage image;
          image.llm_tokens = 4;
          image.token_start = 2;
          image.patches = 16;
          image.vision_flops = 1;
          plan->images.push_back(image);
          seq.image_end = seq.image_begin + 1;
          seq.text_tokens -= 4;
        }
        pack.tokens += seq.tokens;
        pack.images += seq.image_end - seq.image_begin;
        plan->sequences.push_back(seq);
      }
      pack.sequence_end = static_cast<uint32_t>(plan->sequences.size());
      plan->packs.push_back(pack);
    }
  }
  for (uint64_t k = 0; k < step % 3; ++k) plan->dropped.push_back({1, 900 + k});
  EXPECT_TRUE(plan::AddCpStage(*plan, cp::VisionPolicy::kCost).ok());
  EXPECT_TRUE(plan->Validate().ok());
  return plan;
}

// A source that renders sample i as tokens i, i, ... with an image after two text tokens, and
// fills pixels with the sample index. Samples in `bad_render` / `bad_pixels` fail.
class FakeSource final : public SampleSource {
 public:
  std::set<uint64_t> bad_render, bad_pixels;
  std::chrono::microseconds delay{0};

  Result<RenderedSample> Render(const plan::StepPlan& plan,
                                const plan::PlannedSequence& seq) const override {
    if (delay.count() > 0 && seq.index % 7 == 0) std::this_thread::sleep_for(delay);
    if (bad_render.count(seq.index)) {
      return Status::IOError("fake/shard.zip: cannot read sample {}", seq.index);
    }
    RenderedSample s;
    s.source = seq.source;
    s.index = seq.index;
    s.tokens.assign(seq.tokens, static_cast<int32_t>(seq.index));
    s.has_loss.assign(seq.tokens, 1);
    for (const plan::PlannedImage& image : plan.Images(seq)) {
      const uint32_t at = image.token_start;
      s.visuals.push_back({at, image.llm_tokens, 1, 2, 2 * image.llm_tokens, 0});
      for (uint32_t i = 0; i < image.llm_tokens; ++i) {
        s.tokens[at + i] = -7;
        s.has_loss[at + i] = 0;
      }
    }
    return s;
  }

  Status FillPixels(const RenderedSample& sample, const RenderedVisual&,
                    std::span<float> out) const override {
    if (bad_pixels.count(sample.index)) return Status::Corrupt("image of {} is bad", sample.index);
    std::fill(out.begin(), out.end(), static_cast<float>(sample.index));
    return Status::OK();
  }
  uint32_t patch_dim() const override { return 3; }
  uint32_t merge_size() const override { return 2; }
  float tokens_per_second() const override { return 0; }
};

PlanFunction Plans(uint32_t dp, uint32_t ga, uint32_t cp = 1) {
  return [=](uint64_t step) -> Result<std::shared_ptr<const plan::StepPlan>> {
    return MakePlan(step, dp, ga, cp);
  };
}

LoaderOptions Options(uint32_t dp_rank, uint32_t threads, uint64_t end_step) {
  LoaderOptions options;
  options.dp_rank = dp_rank;
  options.threads = threads;
  options.prefetch_micro_steps = 3;
  options.end_step = end_step;
  return options;
}

TEST(Loader, BatchesComeInOrderWithTheirRanksSamples) {
  auto source = std::make_shared<FakeSource>();
  source->delay = std::chrono::microseconds(300);  // out-of-order completion across workers
  auto loader = Loader::Start(source, Plans(2, 3), Options(1, 3, 4));
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  for (uint64_t step = 0; step < 4; ++step) {
    for (uint32_t m = 0; m < 3; ++m) {
      EXPECT_EQ((*loader)->position(), (LoaderPosition{step, m}));
      auto batch = (*loader)->Next();
      ASSERT_TRUE(batch.ok()) << batch.status().ToString();
      ASSERT_NE(*batch, nullptr);
      EXPECT_EQ((*batch)->step, step);
      EXPECT_EQ((*batch)->micro_step, m);
      EXPECT_EQ((*batch)->plan_hash, MakePlan(step, 2, 3)->Hash());
      EXPECT_EQ((*batch)->plan_dropped, step % 3);  // the step's, in each of its batches
      const uint64_t base = step * 1000 + 100 + m * 10;
      EXPECT_EQ((*batch)->sample_index, (std::vector<uint64_t>{base, base + 1, base + 2}));
      EXPECT_EQ((*batch)->tokens.front(), static_cast<int32_t>(base));
      ASSERT_EQ((*batch)->num_patches(), 16u);
      EXPECT_EQ((*batch)->pixel_values.front(), static_cast<float>(base));
    }
  }
  auto end = (*loader)->Next();
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(*end, nullptr);
  EXPECT_EQ((*loader)->stats().batches, 12u);
}

TEST(Loader, RestartFromSavedPositionGivesIdenticalBatches) {
  auto source = std::make_shared<FakeSource>();
  auto first = Loader::Start(source, Plans(2, 4), Options(0, 2, 5));
  ASSERT_TRUE(first.ok());
  for (int i = 0; i < 6; ++i) ASSERT_TRUE((*first)->Next().ok());
  const LoaderPosition saved = (*first)->position();
  EXPECT_EQ(saved, (LoaderPosition{1, 2}));
  std::vector<std::shared_ptr<Batch>> expected;
  for (int i = 0; i < 8; ++i) expected.push_back(*(*first)->Next());

  auto resumed = Loader::Start(source, Plans(2, 4), Options(0, 3, 5), saved);
  ASSERT_TRUE(resumed.ok());
  for (const auto& want : expected) {
    auto got = (*resumed)->Next();
    ASSERT_TRUE(got.ok());
    EXPECT_EQ((*got)->step, want->step);
    EXPECT_EQ((*got)->micro_step, want->micro_step);
    EXPECT_EQ((*got)->tokens, want->tokens);
    EXPECT_EQ((*got)->labels, want->labels);
    EXPECT_EQ((*got)->position_ids, want->position_ids);
    EXPECT_EQ((*got)->pixel_values, want->pixel_values);
  }
}

TEST(Loader, FailPolicyDeliversTheErrorInItsPlaceThenStops) {
  auto source = std::make_shared<FakeSource>();
  source->bad_render = {1021};  // step 1, rank 0, micro-step 2, sample 1
  auto loader = Loader::Start(source, Plans(1, 3), Options(0, 2, 10));
  ASSERT_TRUE(loader.ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*loader)->Next().ok()) << i;
  auto bad = (*loader)->Next();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("step 1 micro-step 2"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("cannot read sample 1021"), std::string::npos);
  auto after = (*loader)->Next();
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), StatusCode::kCancelled);
}

TEST(Loader, DropPolicyLeavesTheSampleOutAndSaysSo) {
  auto source = std::make_shared<FakeSource>();
  source->bad_render = {1};   // step 0, micro-step 0, sample 1: unreadable
  source->bad_pixels = {10};  // step 0, micro-step 1, sample 0: its image does not decode
  LoaderOptions options = Options(0, 2, 1);
  options.on_error = ErrorPolicy::kSkip;
  auto loader = Loader::Start(source, Plans(1, 2), options);
  ASSERT_TRUE(loader.ok());
  auto b0 = (*loader)->Next();
  ASSERT_TRUE(b0.ok()) << b0.status().ToString();
  EXPECT_EQ((*b0)->sample_index, (std::vector<uint64_t>{0, 2}));
  ASSERT_EQ((*b0)->dropped.size(), 1u);
  EXPECT_EQ((*b0)->dropped[0].index, 1u);
  EXPECT_NE((*b0)->dropped[0].reason.find("cannot read sample 1"), std::string::npos);
  EXPECT_EQ((*b0)->cu_seqlens.back(), 10 + 12);

  auto b1 = (*loader)->Next();
  ASSERT_TRUE(b1.ok()) << b1.status().ToString();
  EXPECT_EQ((*b1)->sample_index, (std::vector<uint64_t>{11, 12}));
  ASSERT_EQ((*b1)->dropped.size(), 1u);
  EXPECT_NE((*b1)->dropped[0].reason.find("image of 10 is bad"), std::string::npos);
  EXPECT_TRUE((*b1)->pixel_values.empty());
  EXPECT_EQ((*loader)->stats().dropped, 2u);
}

TEST(Loader, ADropUnderCpReplansThePackAlikeOnEveryRank) {
  // Step 0, micro-step 0, sample 0 (the one with the image) cannot be read: both CP ranks
  // drop it and split the two samples left through the plan's own cp stage.
  auto source = std::make_shared<FakeSource>();
  source->bad_render = {0};
  std::vector<std::shared_ptr<Batch>> shards;
  for (uint32_t r = 0; r < 2; ++r) {
    LoaderOptions options = Options(0, 1, 1);
    options.cp_rank = r;
    options.on_error = ErrorPolicy::kSkip;
    auto loader = Loader::Start(source, Plans(1, 1, 2), options);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    auto batch = (*loader)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    shards.push_back(*batch);
  }
  for (const auto& b : shards) {
    EXPECT_EQ(b->sample_index, (std::vector<uint64_t>{1, 2}));
    EXPECT_EQ(b->cu_seqlens, (std::vector<int32_t>{0, 11, 23}));
    EXPECT_EQ(b->cu_seqlens_padded, (std::vector<int32_t>{0, 12, 24}));  // pad to 2·CP = 4
    EXPECT_TRUE(b->image_rows.empty());
  }
  EXPECT_EQ(shards[0]->tokens.size() + shards[1]->tokens.size(), 24u);
}

TEST(Loader, TinyMemoryBoundStillProgressesOneAtATime) {
  auto source = std::make_shared<FakeSource>();
  LoaderOptions options = Options(0, 4, 6);
  options.max_bytes = 1;
  auto loader = Loader::Start(source, Plans(1, 2), options);
  ASSERT_TRUE(loader.ok());
  for (int i = 0; i < 12; ++i) {
    auto batch = (*loader)->Next();
    ASSERT_TRUE(batch.ok());
    ASSERT_NE(*batch, nullptr);
  }
  // Only ever the one micro-step allowed past the bound.
  EXPECT_EQ((*loader)->stats().peak_micro_steps_in_flight, 1u);

  // With room, the workers run ahead: up to threads + prefetch_micro_steps at once.
  options.max_bytes = uint64_t{1} << 30;
  source->delay = std::chrono::microseconds(2000);
  auto ahead = Loader::Start(source, Plans(1, 2), options);
  ASSERT_TRUE(ahead.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int i = 0; i < 12; ++i) ASSERT_TRUE((*ahead)->Next().ok());
  EXPECT_GT((*ahead)->stats().peak_micro_steps_in_flight, 2u);
  EXPECT_LE((*ahead)->stats().peak_micro_steps_in_flight, 4u + 3u + 1u);
}

TEST(Loader, PlanErrorsAndBadRanksAreReported) {
  auto source = std::make_shared<FakeSource>();
  EXPECT_FALSE(Loader::Start(source, Plans(2, 1), Options(2, 1, 3)).ok());
  PlanFunction failing = [](uint64_t step) -> Result<std::shared_ptr<const plan::StepPlan>> {
    if (step == 2) return Status::InvalidArgument("no plan for step 2");
    return MakePlan(step, 1, 1);
  };
  auto loader = Loader::Start(source, failing, Options(0, 2, 5));
  ASSERT_TRUE(loader.ok());
  ASSERT_TRUE((*loader)->Next().ok());
  ASSERT_TRUE((*loader)->Next().ok());
  auto bad = (*loader)->Next();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no plan for step 2"), std::string::npos);
}

TEST(Loader, PlanAgreementCheckNamesTheRankThatDiffers) {
  comm::InProcessGroup group(2);
  std::array<Status, 2> verdict;
  std::vector<std::thread> ranks;
  for (uint32_t r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      // Rank 1 plans step 1 with a different layout of tokens (as a different seed would).
      PlanFunction plans = [r](uint64_t step) -> Result<std::shared_ptr<const plan::StepPlan>> {
        return MakePlan(step + (r == 1 && step == 1 ? 100 : 0), 2, 1);
      };
      LoaderOptions options = Options(r, 1, 3);
      options.comm = &group.Rank(r);
      auto loader = Loader::Start(std::make_shared<FakeSource>(), plans, options);
      if (!loader.ok()) {
        verdict[r] = loader.status();
        return;
      }
      verdict[r] = (*loader)->Next().status();  // step 0 agrees
      if (!verdict[r].ok()) return;
      verdict[r] = (*loader)->Next().status();  // step 1 does not
    });
  }
  for (auto& t : ranks) t.join();
  for (const Status& s : verdict) {
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("plans of step 1 differ"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("rank 1 has"), std::string::npos) << s.message();
  }
}

TEST(Loader, CpRanksOfOnePackShareTheSequenceAndSplitTheImages) {
  auto source = std::make_shared<FakeSource>();
  std::vector<std::shared_ptr<Batch>> shards;
  for (uint32_t r = 0; r < 2; ++r) {
    LoaderOptions options = Options(0, 1, 1);
    options.cp_rank = r;
    auto loader = Loader::Start(source, Plans(1, 1, 2), options);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    auto batch = (*loader)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    shards.push_back(*batch);
  }
  EXPECT_EQ(shards[0]->cu_seqlens_padded, shards[1]->cu_seqlens_padded);
  EXPECT_EQ(shards[0]->tokens.size() + shards[1]->tokens.size(),
            static_cast<size_t>(shards[0]->cu_seqlens_padded.back()));
  EXPECT_EQ(shards[0]->encoded_images.size() + shards[1]->encoded_images.size(), 1u);
}

}  // namespace
}  // namespace mmpt::load
