// `mmpt simulate`: the seed's ablation (vanilla, + global packing, + reordering, + native
// encoder, + vision DP when CP) on a corpus and a cluster configuration, as estimated
// throughput relative to vanilla. The work lives in sim/corpus_ablation.h.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "mmpt/app/reports.h"
#include "mmpt/corpora/real_corpora.h"
#include "mmpt/ingest/metadata_jsonl.h"
#include "mmpt/sim/corpus_ablation.h"
#include "mmpt/store/planning_table.h"
#include "options.h"

namespace mmpt::cli {
namespace {

struct SimulateOptions {
  std::string corpus;
  std::string builtin;
  std::vector<double> weights;
  LayoutOptions layout;
  PresetOptions presets;
  plan::PlannerConfig planner;
  sim::AblationOptions ablation;
  bool json = false;
};

// The corpus: a path (prepared dataset or metadata JSONL), or one built from the real data.
Result<cost::SampleTable> LoadCorpus(SimulateOptions& o) {
  if (o.builtin.empty() == o.corpus.empty()) {
    return Status::InvalidArgument("give either a corpus path or --builtin");
  }
  if (o.corpus.size() > 0) return ingest::ReadPlanningTable(o.corpus);
  MMPT_ASSIGN_OR_RETURN(corpora::BuiltinCorpus corpus, corpora::LoadBuiltinCorpus(o.builtin));
  if (o.weights.empty()) o.weights = std::move(corpus.weights);
  return std::move(corpus.table);
}

Status RunSimulate(SimulateOptions& o) {
  MMPT_ASSIGN_OR_RETURN(o.planner.layout, o.layout.Get());
  MMPT_ASSIGN_OR_RETURN(cost::SampleTable table, LoadCorpus(o));
  o.planner.source_weights = o.weights;
  // A prepared dataset is simulated with the vision preset its manifest records.
  MMPT_ASSIGN_OR_RETURN(cost::CostModel model, o.presets.CostModelFor(o.corpus));
  MMPT_ASSIGN_OR_RETURN(sim::Ablation ablation,
                        sim::RunCorpusAblation(table, model, o.planner, o.ablation));
  if (o.json) {
    std::printf("%s\n", app::AblationToJson(ablation).dump(2).c_str());
  } else {
    std::printf("%s", app::FormatAblation(ablation).c_str());
  }
  return Status::OK();
}

}  // namespace

Command SimulateCommand() {
  return {
      "simulate",
      "Estimate what each optimization buys: the seed's ablation on a corpus and cluster config "
      "(the seed's setting: --dp 8 --ep 8 --ga 128)",
      [](CLI::App& app) -> Action {
        auto o = std::make_shared<SimulateOptions>();
        app.add_option("corpus", o->corpus,
                       "Prepared dataset directory or metadata-only JSONL (see `mmpt plan`)");
        app.add_option("--builtin", o->builtin,
                       fmt::format("A corpus built from ../shared/data/real: {} (the mix "
                                   "with its source weights)",
                                   corpora::kBuiltinCorpusNames));
        app.add_option("--weights", o->weights, "Blend weight per source (default: by size)");
        o->presets.Add(app);
        o->layout.Add(app);
        app.add_option("--seed", o->planner.seed, "Planner seed")->capture_default_str();
        app.add_option("--steps", o->ablation.steps, "Steps simulated per stage")
            ->capture_default_str();
        app.add_option("--cp-llm-overhead", o->ablation.params.cp_llm_overhead,
                       "LLM time added per CP rank for unhidden KV exchange")
            ->capture_default_str();
        app.add_option("--vision-dp-exchange-overhead",
                       o->ablation.params.vision_dp_exchange_overhead,
                       "Vision time added for the vision-DP embedding exchange")
            ->capture_default_str();
        app.add_option("--microstep-overhead", o->ablation.params.microstep_overhead_seconds,
                       "Fixed seconds per micro-step")
            ->capture_default_str();
        app.add_option("--allreduce-seconds", o->ablation.params.grad_allreduce_seconds,
                       "Unhidden gradient all-reduce seconds per step")
            ->capture_default_str();
        AddVanillaBuffer(app, &o->planner.vanilla_buffer);
        AddAllowRepeat(app, &o->planner.allow_repeat);
        AddJson(app, &o->json);
        return [o] { return RunSimulate(*o); };
      }};
}

}  // namespace mmpt::cli
