#include "mmpt/plan/compare.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mmpt/pack/packing_bound.h"
#include "mmpt/plan/vanilla.h"

namespace mmpt::plan {
namespace {

// Accumulates one planner's steps into its figures.
class Tally {
 public:
  void Add(const StepPlan& plan, const StepStats& stats, uint32_t seq_len) {
    f_.packs += stats.packs;
    f_.lower_bound_packs += stats.lower_bound_packs;
    f_.tokens += stats.tokens;
    f_.placed += stats.placed;
    f_.dropped += stats.dropped;
    f_.truncated += stats.truncated;
    f_.step_seconds += plan.estimate.step_seconds;
    f_.lower_bound_seconds += plan.estimate.lower_bound_seconds;
    const balance::Estimate& e = plan.estimate;
    f_.max_vision_imbalance =
        std::max(f_.max_vision_imbalance, e.max_encoder_imbalance[balance::kVisionEncoder]);
    f_.max_audio_imbalance =
        std::max(f_.max_audio_imbalance, e.max_encoder_imbalance[balance::kAudioEncoder]);
    f_.max_llm_imbalance = std::max(f_.max_llm_imbalance, e.max_llm_imbalance);
    sum_mean_v_ += e.mean_encoder_imbalance[balance::kVisionEncoder];
    sum_mean_a_ += e.mean_encoder_imbalance[balance::kAudioEncoder];
    sum_mean_l_ += e.mean_llm_imbalance;
    for (const PlannedPack& pack : plan.packs) f_.audio_seconds += pack.audio_seconds;
    f_.plan_seconds_per_step += stats.plan_seconds;
    f_.last_plan_hash = plan.Hash();
    seq_len_ = seq_len;
    ++steps_;
  }
  PlannerFigures Finish(uint32_t dp) {
    double total_seconds = f_.step_seconds;
    f_.efficiency = static_cast<double>(f_.tokens) / (static_cast<double>(f_.packs) * seq_len_);
    f_.tokens_per_second = total_seconds > 0 ? f_.tokens / total_seconds / dp : 0;
    f_.step_seconds /= steps_;
    f_.lower_bound_seconds /= steps_;
    f_.mean_vision_imbalance = sum_mean_v_ / steps_;
    f_.mean_llm_imbalance = sum_mean_l_ / steps_;
    f_.mean_audio_imbalance = sum_mean_a_ / steps_;
    f_.plan_seconds_per_step /= steps_;
    return f_;
  }

 private:
  PlannerFigures f_;
  double sum_mean_v_ = 0, sum_mean_a_ = 0, sum_mean_l_ = 0;
  uint32_t seq_len_ = 1;
  uint32_t steps_ = 0;
};

nlohmann::json FiguresJson(const PlannerFigures& f) {
  nlohmann::json j = {{"packing_efficiency", f.efficiency},
          {"packs", f.packs},
          {"lower_bound_packs", f.lower_bound_packs},
          {"tokens", f.tokens},
          {"samples_placed", f.placed},
          {"samples_dropped", f.dropped},
          {"samples_truncated", f.truncated},
          {"step_seconds", f.step_seconds},
          {"lower_bound_seconds", f.lower_bound_seconds},
          {"max_vision_imbalance", f.max_vision_imbalance},
          {"max_llm_imbalance", f.max_llm_imbalance},
          {"mean_vision_imbalance", f.mean_vision_imbalance},
          {"mean_llm_imbalance", f.mean_llm_imbalance},
          {"audio_seconds", f.audio_seconds},
          {"max_audio_imbalance", f.max_audio_imbalance},
          {"mean_audio_imbalance", f.mean_audio_imbalance},
          {"tokens_per_second_per_replica", f.tokens_per_second},
          {"plan_seconds_per_step", f.plan_seconds_per_step},
          {"last_plan_hash", fmt::format("{:016x}", f.last_plan_hash)}};
  return j;
}

// PackingLimit of a run that placed `placed` (tokens each) in `packs` packs and carries `carried`.
Result<PackingLimit> Limit(std::vector<uint32_t> placed, std::span<const PlacedSample> carried,
                           uint64_t packs, uint32_t seq_len) {
  std::vector<uint32_t> carried_tokens;
  for (const PlacedSample& sample : carried) carried_tokens.push_back(sample.tokens);
  placed.insert(placed.end(), carried_tokens.begin(), carried_tokens.end());
  MMPT_ASSIGN_OR_RETURN(pack::PackingBound all, pack::BoundPacking(placed, seq_len));
  MMPT_ASSIGN_OR_RETURN(pack::PackingBound rest, pack::BoundPacking(carried_tokens, seq_len));
  uint64_t tokens = 0;
  for (uint32_t t : placed) tokens += t;
  PackingLimit limit;
  limit.bound = all.efficiency;
  const double rest_packs = carried_tokens.empty() ? 0 : std::ceil(rest.packs - 1e-6);
  limit.settled = static_cast<double>(tokens) / ((static_cast<double>(packs) + rest_packs) * seq_len);
  limit.carried = carried.size();
  limit.grain_tokens = all.grain_tokens;
  limit.seconds = all.seconds + rest.seconds;
  return limit;
}

}  // namespace

Result<Comparison> ComparePlanners(const cost::SampleTable& table, const cost::CostModel& model,
                                   const PlannerConfig& config, uint32_t steps) {
  if (steps == 0) return Status::InvalidArgument("--steps must be at least 1");
  MMPT_RETURN_IF_ERROR(config.Validate());
  MMPT_ASSIGN_OR_RETURN(cost::CostedSamples costs, cost::CostSamples(table, model));
  MMPT_ASSIGN_OR_RETURN(VanillaPlanner vanilla,
                        VanillaPlanner::Create(table, costs, model, config));
  MMPT_ASSIGN_OR_RETURN(Planner mmpt, Planner::Create(table, costs, model, config));
  Tally vanilla_tally, mmpt_tally;
  std::vector<uint32_t> placed_tokens;  // of every sample mmpt placed
  for (uint32_t s = 0; s < steps; ++s) {
    MMPT_ASSIGN_OR_RETURN(StepPlan v, vanilla.PlanStep());
    vanilla_tally.Add(v, vanilla.last_stats(), config.layout.seq_len);
    MMPT_ASSIGN_OR_RETURN(StepPlan m, mmpt.PlanStep());
    mmpt_tally.Add(m, mmpt.last_stats(), config.layout.seq_len);
    for (const PlannedSequence& seq : m.sequences) placed_tokens.push_back(seq.tokens);
  }
  Comparison c;
  c.steps = steps;
  c.layout = config.layout;
  c.vision = model.vision().name;
  c.llm = model.llm().name;
  c.hardware = model.hardware().name;
  c.samples = table.num_samples();
  c.vanilla = vanilla_tally.Finish(config.layout.dp);
  c.vanilla_buffer = config.vanilla_buffer;
  c.vanilla_buffer_turnover = static_cast<double>(c.vanilla.placed) / config.layout.dp /
                              config.vanilla_buffer;
  c.mmpt = mmpt_tally.Finish(config.layout.dp);
  MMPT_ASSIGN_OR_RETURN(c.mmpt_limit, Limit(placed_tokens, mmpt.carried(), c.mmpt.packs,
                                            config.layout.seq_len));
  return c;
}

std::string FormatComparison(const Comparison& c) {
  const Layout& l = c.layout;
  std::string out = fmt::format(
      "corpus {} samples · {} step(s) · seq {} · DP {} TP {} PP {} CP {} EP {} GA {} MBS {} · "
      "sync {}\nvision {} · llm {} · hardware {}\n\n",
      c.samples, c.steps, l.seq_len, l.dp, l.tp, l.pp, l.cp, l.ep, l.ga, l.mbs,
      SyncModelName(l.sync), c.vision, c.llm, c.hardware);
  out += fmt::format("{:<34}{:>16}{:>16}\n", "", "vanilla", "mmpt");
  auto row = [&](std::string_view name, std::string a, std::string b) {
    out += fmt::format("{:<34}{:>16}{:>16}\n", name, a, b);
  };
  auto pct = [](double x) { return fmt::format("{:.2f}%", 100 * x); };
  auto num = [](uint64_t x) { return fmt::format("{}", x); };
  auto sec = [](double x) { return fmt::format("{:.3f} s", x); };
  auto ratio = [](double x) { return fmt::format("{:.3f}", x); };
  row("packing efficiency", pct(c.vanilla.efficiency), pct(c.mmpt.efficiency));
  row("packs (lower bound)",
      fmt::format("{} ({})", c.vanilla.packs, c.vanilla.lower_bound_packs),
      fmt::format("{} ({})", c.mmpt.packs, c.mmpt.lower_bound_packs));
  row("samples placed", num(c.vanilla.placed), num(c.mmpt.placed));
  row("samples dropped / truncated",
      fmt::format("{} / {}", c.vanilla.dropped, c.vanilla.truncated),
      fmt::format("{} / {}", c.mmpt.dropped, c.mmpt.truncated));
  row("vision imbalance max (mean)",
      fmt::format("{:.3f} ({:.3f})", c.vanilla.max_vision_imbalance, c.vanilla.mean_vision_imbalance),
      fmt::format("{:.3f} ({:.3f})", c.mmpt.max_vision_imbalance, c.mmpt.mean_vision_imbalance));
  if (c.vanilla.audio_seconds > 0 || c.mmpt.audio_seconds > 0) {
    row("audio imbalance max (mean)",
        fmt::format("{:.3f} ({:.3f})", c.vanilla.max_audio_imbalance,
                    c.vanilla.mean_audio_imbalance),
        fmt::format("{:.3f} ({:.3f})", c.mmpt.max_audio_imbalance, c.mmpt.mean_audio_imbalance));
  }
  row("LLM imbalance max (mean)",
      fmt::format("{:.3f} ({:.3f})", c.vanilla.max_llm_imbalance, c.vanilla.mean_llm_imbalance),
      fmt::format("{:.3f} ({:.3f})", c.mmpt.max_llm_imbalance, c.mmpt.mean_llm_imbalance));
  row("est. step time", sec(c.vanilla.step_seconds), sec(c.mmpt.step_seconds));
  row("lower bound (perfect balance)", sec(c.vanilla.lower_bound_seconds),
      sec(c.mmpt.lower_bound_seconds));
  row("step time / lower bound", ratio(c.vanilla.step_seconds / c.vanilla.lower_bound_seconds),
      ratio(c.mmpt.step_seconds / c.mmpt.lower_bound_seconds));
  row("tokens/s per replica", fmt::format("{:.0f}", c.vanilla.tokens_per_second),
      fmt::format("{:.0f}", c.mmpt.tokens_per_second));
  row("planning time per step", fmt::format("{:.1f} ms", 1e3 * c.vanilla.plan_seconds_per_step),
      fmt::format("{:.1f} ms", 1e3 * c.mmpt.plan_seconds_per_step));
  row("plan hash (last step)", fmt::format("{:016x}", c.vanilla.last_plan_hash),
      fmt::format("{:016x}", c.mmpt.last_plan_hash));
  out += fmt::format("\nmmpt vs vanilla: step time ×{:.3f}, throughput ×{:.3f}\n",
                     1.0 / c.step_speedup(), c.throughput_speedup());
  out += fmt::format(
      "mmpt packing: {} samples carried past the last step; with them packed {}, and no packing "
      "of every sample drawn fills more than {} (LP bound, sizes in {}-token grains, {:.2f} s)\n",
      c.mmpt_limit.carried, pct(c.mmpt_limit.settled), pct(c.mmpt_limit.bound),
      c.mmpt_limit.grain_tokens, c.mmpt_limit.seconds);
  if (c.vanilla_buffer_turnover < 3) {
    out += fmt::format(
        "note: each vanilla rank trained on only {1:.1f} of its {0}-sample packing buffers; it "
        "trains on a buffer's fullest packs first, so its figures still favour it — plan more "
        "--steps for the steady state\n",
        c.vanilla_buffer, c.vanilla_buffer_turnover);
  }
  return out;
}

std::string ComparisonJson(const Comparison& c) {
  const Layout& l = c.layout;
  nlohmann::json j = {
      {"steps", c.steps},
      {"samples", c.samples},
      {"layout",
       {{"seq_len", l.seq_len}, {"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"cp", l.cp},
        {"ep", l.ep}, {"ga", l.ga}, {"mbs", l.mbs}, {"sync", std::string(SyncModelName(l.sync))}}},
      {"vision", c.vision},
      {"llm", c.llm},
      {"hardware", c.hardware},
      {"vanilla", FiguresJson(c.vanilla)},
      {"mmpt", FiguresJson(c.mmpt)},
      {"mmpt_packing_limit",
       {{"settled_efficiency", c.mmpt_limit.settled},
        {"bound_efficiency", c.mmpt_limit.bound},
        {"carried_samples", c.mmpt_limit.carried},
        {"grain_tokens", c.mmpt_limit.grain_tokens},
        {"seconds", c.mmpt_limit.seconds}}},
      {"step_speedup", c.step_speedup()},
      {"vanilla_buffer_turnover", c.vanilla_buffer_turnover},
      {"throughput_speedup", c.throughput_speedup()}};
  return j.dump(2);
}

}  // namespace mmpt::plan
