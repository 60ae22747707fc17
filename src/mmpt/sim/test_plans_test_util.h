#pragma once

// Hand-built StepPlans for the sim tests.

#include <initializer_list>
#include <vector>

#include <gtest/gtest.h>

#include "mmpt/cost/sample_table.h"
#include "mmpt/plan/cp_stage.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::sim::testing_plans {

/// An image of a test pack: LLM tokens and vision FLOPs.
struct ImageSpec {
  uint32_t llm_tokens = 0;
  double flops = 1;
};

/// A test pack: its samples' token counts, the images (all in the first sample), and its costs.
struct PackSpec {
  std::vector<uint32_t> samples;
  std::vector<ImageSpec> images;
  double vision_seconds = 0;
  double llm_seconds = 0;
};

/// Build a plan with `packs` in (rank, micro-step, slot) order, its images spread in their
/// sample's text (cost::SpreadTextPosition), and its cp stage run under `policy`.
inline plan::StepPlan MakePlan(const plan::Layout& layout, std::vector<PackSpec> packs,
                               cp::VisionPolicy policy = cp::VisionPolicy::kNaive) {
  plan::StepPlan plan;
  plan.layout = layout;
  for (const PackSpec& spec : packs) {
    plan::PlannedPack pack;
    pack.sequence_begin = static_cast<uint32_t>(plan.sequences.size());
    for (size_t s = 0; s < spec.samples.size(); ++s) {
      plan::PlannedSequence seq;
      seq.index = plan.sequences.size();
      seq.tokens = spec.samples[s];
      seq.image_begin = static_cast<uint32_t>(plan.images.size());
      uint32_t image_tokens = 0;
      if (s == 0) {
        std::vector<uint32_t> counts;
        for (const ImageSpec& image : spec.images) counts.push_back(image.llm_tokens);
        for (uint32_t count : counts) image_tokens += count;
        const std::vector<uint32_t> starts =
            cost::SpreadImageStarts(seq.tokens - image_tokens, counts);
        for (size_t i = 0; i < spec.images.size(); ++i) {
          plan::PlannedImage planned;
          planned.sample_image = static_cast<uint32_t>(i);
          planned.llm_tokens = counts[i];
          planned.token_start = starts[i];
          planned.vision_flops = spec.images[i].flops;
          plan.images.push_back(planned);
        }
      }
      seq.text_tokens = seq.tokens - image_tokens;
      seq.image_end = static_cast<uint32_t>(plan.images.size());
      pack.tokens += seq.tokens;
      pack.images += seq.image_end - seq.image_begin;
      plan.sequences.push_back(seq);
    }
    pack.sequence_end = static_cast<uint32_t>(plan.sequences.size());
    pack.vision_seconds = spec.vision_seconds;
    pack.llm_seconds = spec.llm_seconds;
    plan.packs.push_back(pack);
  }
  EXPECT_TRUE(plan::AddCpStage(plan, policy).ok());
  return plan;
}

}  // namespace mmpt::sim::testing_plans
