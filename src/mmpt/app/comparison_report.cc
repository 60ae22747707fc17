#include "mmpt/app/reports.h"

#include <algorithm>

#include <fmt/format.h>

namespace mmpt::app {

namespace {

nlohmann::json FiguresJson(const plan::PlannerFigures& f) {
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

nlohmann::json SourcesJson(const std::vector<plan::SourceShare>& sources) {
  nlohmann::json j = nlohmann::json::array();
  for (const plan::SourceShare& s : sources) {
    j.push_back({{"name", s.name}, {"samples", s.samples}, {"weight", s.weight}});
  }
  return j;
}

}  // namespace

std::string FormatComparison(const plan::Comparison& c) {
  const plan::Layout& l = c.layout;
  std::string out = fmt::format(
      "corpus {} samples · {} step(s) · seq {} · DP {} TP {} PP {} CP {} EP {} GA {} MBS {} · "
      "sync {}\nvision {} · llm {} · hardware {}\n\n",
      c.samples, c.steps, l.seq_len, l.dp, l.tp, l.pp, l.cp, l.ep, l.ga, l.mbs,
      plan::SyncModelName(l.sync), c.vision, c.llm, c.hardware);
  out += "source weights (the blend's share of draws; default: by size):\n";
  for (const plan::SourceShare& source : c.sources) {
    out += fmt::format("  {:<32}{:>16} samples{:>10.4f}\n", source.name, source.samples,
                       source.weight);
  }
  out += fmt::format("\n{:<34}{:>16}{:>16}\n", "", "vanilla", "mmpt");
  auto row = [&](std::string_view name, std::string a, std::string b) {
    out += fmt::format("{:<34}{:>16}{:>16}\n", name, a, b);
  };
  auto pct = [](double x) { return fmt::format("{:.2f}%", 100 * x); };
  auto num = [](uint64_t x) { return fmt::format("{}", x); };
  auto sec = [](double x) { return fmt::format("{:.3f} s", x); };
  auto ratio = [](double x) { return fmt::format("{:.3f}", x); };
  row("packing efficiency", pct(c.vanilla.efficiency), pct(c.mmpt.efficiency));
  row("packs (lower bound)", fmt::format("{} ({})", c.vanilla.packs, c.vanilla.lower_bound_packs),
      fmt::format("{} ({})", c.mmpt.packs, c.mmpt.lower_bound_packs));
  row("samples placed", num(c.vanilla.placed), num(c.mmpt.placed));
  row("samples dropped / truncated", fmt::format("{} / {}", c.vanilla.dropped, c.vanilla.truncated),
      fmt::format("{} / {}", c.mmpt.dropped, c.mmpt.truncated));
  row("vision imbalance max (mean)",
      fmt::format("{:.3f} ({:.3f})", c.vanilla.max_vision_imbalance,
                  c.vanilla.mean_vision_imbalance),
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
  return out + VanillaTransientNote(c.vanilla_buffer, c.vanilla_buffer_turnover);
}

std::string VanillaTransientNote(uint32_t buffer, double turnover) {
  if (buffer == 0 || turnover >= 3) return "";
  return fmt::format(
      "note: each vanilla rank trained on only {1:.1f} of its {0}-sample packing buffers; it "
      "trains on a buffer's fullest packs first, so its figures still favour it — plan more "
      "--steps for the steady state\n",
      buffer, turnover);
}

std::string ComparisonJson(const plan::Comparison& c) {
  const plan::Layout& l = c.layout;
  nlohmann::json j = {{"steps", c.steps},
                      {"samples", c.samples},
                      {"layout",
                       {{"seq_len", l.seq_len},
                        {"dp", l.dp},
                        {"tp", l.tp},
                        {"pp", l.pp},
                        {"cp", l.cp},
                        {"ep", l.ep},
                        {"ga", l.ga},
                        {"mbs", l.mbs},
                        {"sync", std::string(plan::SyncModelName(l.sync))}}},
                      {"sources", SourcesJson(c.sources)},
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

}  // namespace mmpt::app
