// Bindings of mmpt::sim: the step-time model's prediction of CP vision load, for a plan given
// from Python as packs of sub-sequences with their images.

#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "bind_common.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/cp/vision_assign.h"
#include "mmpt/plan/cp_stage.h"
#include "mmpt/plan/step_plan.h"
#include "mmpt/sim/step_model.h"

namespace mmpt::python {
namespace {

// (tokens, [(llm_tokens, vision_flops), ...]) per sub-sequence; one list per pack.
using Sequence = std::tuple<uint32_t, std::vector<std::tuple<uint32_t, double>>>;

// One DP rank's micro-steps, one pack each: layout dp 1, ga = packs, mbs 1.
plan::StepPlan MakePlan(const std::vector<std::vector<Sequence>>& packs, uint32_t cp,
                        double seconds_per_flop) {
  plan::StepPlan plan;
  plan.layout.cp = cp;
  plan.layout.ga = static_cast<uint32_t>(packs.size());
  plan.layout.sync = plan::SyncModel::kStep;
  uint32_t longest = 1;
  for (const auto& pack : packs) {
    plan::PlannedPack planned;
    planned.sequence_begin = static_cast<uint32_t>(plan.sequences.size());
    for (const auto& [tokens, images] : pack) {
      plan::PlannedSequence sequence;
      sequence.index = plan.sequences.size();
      sequence.tokens = tokens;
      sequence.image_begin = static_cast<uint32_t>(plan.images.size());
      uint32_t image_tokens = 0;
      for (const auto& [llm_tokens, flops] : images) image_tokens += llm_tokens;
      sequence.text_tokens = tokens > image_tokens ? tokens - image_tokens : 0;
      uint32_t image_tokens_before = 0;
      for (const auto& [llm_tokens, flops] : images) {
        plan::PlannedImage image;
        image.sample_image = static_cast<uint32_t>(plan.images.size() - sequence.image_begin);
        image.llm_tokens = llm_tokens;
        image.token_start = cost::SpreadTextPosition(sequence.text_tokens, image.sample_image,
                                                     images.size()) +
                            image_tokens_before;
        image.vision_flops = flops;
        plan.images.push_back(image);
        image_tokens_before += llm_tokens;
        planned.vision_seconds += flops * seconds_per_flop;
      }
      sequence.image_end = static_cast<uint32_t>(plan.images.size());
      planned.tokens += tokens;
      planned.images += sequence.image_end - sequence.image_begin;
      plan.sequences.push_back(sequence);
    }
    planned.sequence_end = static_cast<uint32_t>(plan.sequences.size());
    longest = std::max(longest, planned.tokens);
    plan.packs.push_back(planned);
  }
  plan.layout.seq_len = (longest + 2 * cp - 1) / (2 * cp) * (2 * cp);
  return plan;
}

}  // namespace

void BindSim(py::module_& m) {
  m.def(
      "simulate_cp_vision",
      [](const std::vector<std::vector<Sequence>>& packs, uint32_t cp, const std::string& policy,
         double seconds_per_flop, double exchange_overhead) {
        plan::StepPlan plan = MakePlan(packs, cp, seconds_per_flop);
        ThrowIfError(plan.layout.Validate());
        ThrowIfError(plan.Validate());
        ThrowIfError(plan::AddCpStage(plan, ValueOrThrow(cp::ParseVisionPolicy(policy))));
        sim::SimParams params;
        params.vision_dp_exchange_overhead = exchange_overhead;
        sim::StepSim step = ValueOrThrow(sim::SimulateStep(plan, params));
        std::vector<std::vector<double>> vision(plan.layout.ga, std::vector<double>(cp));
        for (uint32_t micro = 0; micro < plan.layout.ga; ++micro) {
          for (uint32_t r = 0; r < cp; ++r) vision[micro][r] = step.at(0, micro, r).vision_seconds;
        }
        py::dict out;
        out["vision_seconds"] = vision;
        out["step_seconds"] = step.step_seconds;
        out["cp_vision_imbalance"] = step.cp_vision_imbalance;
        out["parameters"] = params.Describe();
        return out;
      },
      py::arg("packs"), py::arg("cp"), py::arg("policy"), py::kw_only(),
      py::arg("seconds_per_flop") = 1e-12, py::arg("exchange_overhead") = 0.0,
      "Run the step-time model (sim::SimulateStep) on one DP rank's micro-steps, one pack each: "
      "`packs` holds per pack its sub-sequences as (tokens, [(image llm_tokens, vision_flops), "
      "...]). Returns {'vision_seconds': per micro-step, per CP rank; 'step_seconds'; "
      "'cp_vision_imbalance': per pack, the most-loaded CP rank's vision cost over the pack's "
      "vision cost / CP; 'parameters'}. Images sit among their "
      "sample's text as cost::SpreadTextPosition puts them (mmpt.place_images).");
}

}  // namespace mmpt::python
