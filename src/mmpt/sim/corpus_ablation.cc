#include "mmpt/sim/corpus_ablation.h"

#include <map>
#include <string>

#include <fmt/format.h>

#include "mmpt/plan/vanilla.h"

namespace mmpt::sim {
namespace {

std::string Measured(const cost::HardwareConfig& hardware) {
  if (hardware.measured.empty()) return "nothing: no figure of this run comes from a device";
  return fmt::format("hardware {}: {}", hardware.name, hardware.measured);
}

}  // namespace

Result<Ablation> RunCorpusAblation(const cost::SampleTable& table, const cost::CostModel& model,
                                   const plan::PlannerConfig& config, AblationOptions options) {
  MMPT_RETURN_IF_ERROR(config.Validate());
  MMPT_ASSIGN_OR_RETURN(plan::VanillaPlanner vanilla,
                        plan::VanillaPlanner::Create(table, model, config));
  // One mmpt planner per CP vision policy the stages ask for (made at its first step): each
  // balances what its policy makes a pack cost.
  std::map<cp::VisionPolicy, plan::Planner> mmpt;
  auto next = [&](cp::VisionPolicy policy) -> Result<plan::StepPlan> {
    auto it = mmpt.find(policy);
    if (it == mmpt.end()) {
      plan::PlannerConfig for_policy = config;
      for_policy.cp_vision = policy;
      MMPT_ASSIGN_OR_RETURN(plan::Planner planner, plan::Planner::Create(table, model, for_policy));
      it = mmpt.emplace(policy, std::move(planner)).first;
    }
    return it->second.PlanStep();
  };
  options.params.attention_pair_weight = model.AttentionPairWeight();
  options.native_encoder_factor = model.hardware().native_encoder_factor;
  MMPT_ASSIGN_OR_RETURN(Ablation ablation,
                        RunAblation([&] { return vanilla.PlanStep(); }, next, options));
  ablation.vanilla_buffer = config.vanilla_buffer;
  ablation.vanilla_buffer_turnover = plan::VanillaBufferTurnover(ablation.vanilla_samples, config);
  const plan::Layout& l = config.layout;
  ablation.parameters =
      fmt::format(
          "  corpus: {} samples, {} images, {} sources\n"
          "  models: vision {}, llm {}, hardware {} (presets/)\n"
          "  layout: DP {} TP {} PP {} CP {} EP {} GA {} MBS {} seq {} sync {}\n"
          "  measured: {}\n"
          "  assumed: {}the parameters below, unless given on the command line\n",
          table.num_samples(), table.num_images(), table.num_sources(), model.vision().name,
          model.llm().name, model.hardware().name, l.dp, l.tp, l.pp, l.cp, l.ep, l.ga, l.mbs,
          l.seq_len, plan::SyncModelName(l.sync), Measured(model.hardware()),
          model.hardware().measured.empty()
              ? fmt::format("hardware {}'s peak and utilizations; ", model.hardware().name)
              : "") +
      ablation.parameters;
  return ablation;
}

}  // namespace mmpt::sim
