// Bindings of mmpt::sim: the step-time model's prediction of CP vision load, for a plan given
// from Python as packs of sub-sequences with their images; and, with the loader's bindings, its
// prediction for a step a PlanStream serves (the plan the loader executes).

#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "bind_common.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/cp/vision_assign.h"
#include "mmpt/load/plan_stream.h"
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
      std::vector<uint32_t> counts;
      for (const auto& [llm_tokens, flops] : images) counts.push_back(llm_tokens);
      const uint32_t image_tokens = std::accumulate(counts.begin(), counts.end(), 0u);
      sequence.text_tokens = tokens > image_tokens ? tokens - image_tokens : 0;
      const std::vector<uint32_t> starts = cost::SpreadImageStarts(sequence.text_tokens, counts);
      for (size_t i = 0; i < images.size(); ++i) {
        plan::PlannedImage image;
        image.sample_image = static_cast<uint32_t>(i);
        image.llm_tokens = counts[i];
        image.token_start = starts[i];
        image.vision_flops = std::get<1>(images[i]);
        plan.images.push_back(image);
        planned.vision_seconds += image.vision_flops * seconds_per_flop;
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
  // 0 for a layout Validate refuses (cp 0): the caller validates before using the plan.
  const uint32_t multiple = std::max(1u, plan.layout.PadMultiple());
  plan.layout.seq_len = (longest + multiple - 1) / multiple * multiple;
  return plan;
}

}  // namespace

void BindSim(py::module_& m) {
  m.def(
      "simulate_step",
      [](load::PlanStream& stream, uint64_t step, double vision_speed_factor,
         double cp_llm_overhead, double vision_dp_exchange_overhead,
         double microstep_overhead_seconds, double grad_allreduce_seconds) {
        Result<std::shared_ptr<const plan::StepPlan>> planned = [&] {
          py::gil_scoped_release release;  // planning may take a while; loaders share the stream
          return stream.Plan(step);
        }();
        std::shared_ptr<const plan::StepPlan> plan = ValueOrThrow(std::move(planned));
        sim::SimParams params;
        params.vision_speed_factor = vision_speed_factor;
        params.cp_llm_overhead = cp_llm_overhead;
        params.vision_dp_exchange_overhead = vision_dp_exchange_overhead;
        params.microstep_overhead_seconds = microstep_overhead_seconds;
        params.grad_allreduce_seconds = grad_allreduce_seconds;
        params.attention_pair_weight = stream.model().AttentionPairWeight();
        sim::StepSim sim = ValueOrThrow(sim::SimulateStep(*plan, params));
        // [dp][ga][cp], as the loader's (dp_rank, micro_step, cp_rank).
        std::vector<std::vector<std::vector<double>>> vision(
            sim.dp, std::vector<std::vector<double>>(sim.ga, std::vector<double>(sim.cp)));
        auto llm = vision, pairs = vision;
        for (uint32_t d = 0; d < sim.dp; ++d) {
          for (uint32_t m = 0; m < sim.ga; ++m) {
            for (uint32_t r = 0; r < sim.cp; ++r) {
              vision[d][m][r] = sim.at(d, m, r).vision_seconds;
              llm[d][m][r] = sim.at(d, m, r).llm_seconds;
              pairs[d][m][r] = sim.at(d, m, r).attention_pairs;
            }
          }
        }
        py::dict out;
        out["step"] = plan->step;
        out["vision_seconds"] = vision;
        out["llm_seconds"] = llm;
        out["attention_pairs"] = pairs;
        out["step_seconds"] = sim.step_seconds;
        out["lower_bound_seconds"] = sim.lower_bound_seconds;
        out["atomic_lower_bound_seconds"] = sim.atomic_lower_bound_seconds;
        out["tokens"] = sim.tokens;
        out["hardware"] = stream.model().hardware().name;
        out["parameters"] = params.Describe();
        return out;
      },
      py::arg("stream"), py::arg("step"), py::kw_only(),
      py::arg("vision_speed_factor") = sim::SimParams{}.vision_speed_factor,
      py::arg("cp_llm_overhead") = sim::SimParams{}.cp_llm_overhead,
      py::arg("vision_dp_exchange_overhead") = sim::SimParams{}.vision_dp_exchange_overhead,
      py::arg("microstep_overhead_seconds") = sim::SimParams{}.microstep_overhead_seconds,
      py::arg("grad_allreduce_seconds") = sim::SimParams{}.grad_allreduce_seconds,
      "Run the step-time model (sim::SimulateStep) on the plan of `step` a PlanStream serves, "
      "with its cost model (presets) and the LLM's attention pair weight. Returns "
      "{'vision_seconds', 'llm_seconds', 'attention_pairs' (causal pairs its queries attend): "
      "per [dp_rank][micro_step][cp_rank], before waiting; "
      "'step_seconds' under the layout's sync model; 'lower_bound_seconds'; "
      "'atomic_lower_bound_seconds' (indivisible images and packs); 'tokens'; "
      "'hardware'; 'parameters'}.");
  m.def(
      "synced_seconds",
      [](const load::PlanStream& stream,
         const std::vector<std::vector<std::vector<double>>>& vision,
         const std::vector<std::vector<std::vector<double>>>& llm) {
        const plan::Layout& layout = stream.layout();
        std::vector<sim::RankTime> ranks;
        for (size_t d = 0; d < vision.size() && d < llm.size(); ++d) {
          for (size_t m = 0; m < vision[d].size() && m < llm[d].size(); ++m) {
            if (vision[d][m].size() != layout.cp || llm[d][m].size() != layout.cp) {
              ThrowIfError(Status::InvalidArgument(
                  "rank {} micro-step {}: {} vision and {} LLM times for CP {}", d, m,
                  vision[d][m].size(), llm[d][m].size(), layout.cp));
            }
            for (uint32_t r = 0; r < layout.cp; ++r) {
              ranks.push_back({.vision_seconds = vision[d][m][r], .llm_seconds = llm[d][m][r]});
            }
          }
        }
        return ValueOrThrow(sim::SyncedSeconds(layout, ranks));
      },
      py::arg("stream"), py::arg("vision"), py::arg("llm"),
      "The step time of per-rank seconds, vision and llm each [dp_rank][micro_step][cp_rank] "
      "(measured, or simulate_step's), under the stream's layout and sync model "
      "(sim::SyncedSeconds), before fixed overheads.");
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
