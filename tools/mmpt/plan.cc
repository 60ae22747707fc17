// `mmpt plan`: plan steps on a prepared dataset or metadata-only JSONL and print vanilla beside
// mmpt (packing, balance, estimated step time against the lower bound, planning time).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "command.h"
#include "mmpt/app/reports.h"
#include "mmpt/corpora/real_corpora.h"
#include "mmpt/ingest/metadata_jsonl.h"
#include "mmpt/plan/compare.h"
#include "mmpt/store/planning_table.h"
#include "options.h"

namespace mmpt::cli {
namespace {

struct PlanOptions {
  std::vector<std::string> inputs;
  std::string builtin;
  plan::PlannerConfig config;
  LayoutOptions layout;
  PresetOptions presets;
  std::string overlong = "truncate";
  std::vector<double> weights;
  uint32_t steps = 1;
  bool json = false;
};

// The corpus; a built-in one sets its source weights unless --weights gave them.
Result<cost::SampleTable> LoadInput(PlanOptions& o) {
  if (!o.builtin.empty()) {
    if (!o.inputs.empty()) return Status::InvalidArgument("give either inputs or --builtin");
    MMPT_ASSIGN_OR_RETURN(corpora::BuiltinCorpus corpus, corpora::LoadBuiltinCorpus(o.builtin));
    if (o.weights.empty()) o.weights = std::move(corpus.weights);
    return std::move(corpus.table);
  }
  if (o.inputs.empty()) {
    return Status::InvalidArgument(
        "give a prepared dataset directory, metadata JSONL files, or --builtin");
  }
  if (o.inputs.size() == 1) return ingest::ReadPlanningTable(o.inputs[0]);
  std::string joined;
  for (const std::string& input : o.inputs) joined += " " + input;
  for (const std::string& input : o.inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(input, ec)) {
      return Status::InvalidArgument(
          "{}: plan takes one prepared dataset; join several first (shards are not copied) with "
          "`mmpt merge{} --out MERGED`, then `mmpt plan MERGED` (--weights blends its sources)",
          input, joined);
    }
  }
  return ingest::ReadMetadataJsonl(o.inputs);
}

Status Run(PlanOptions o) {
  MMPT_ASSIGN_OR_RETURN(o.config.layout, o.layout.Get());
  MMPT_ASSIGN_OR_RETURN(o.config.overlong, pack::ParseOverlongPolicy(o.overlong));
  MMPT_RETURN_IF_ERROR(o.config.Validate());
  // A prepared dataset is planned with the vision preset its manifest records.
  MMPT_ASSIGN_OR_RETURN(cost::CostModel model,
                        o.presets.CostModelFor(o.inputs.size() == 1 ? o.inputs[0] : ""));
  MMPT_ASSIGN_OR_RETURN(cost::SampleTable table, LoadInput(o));
  o.config.source_weights = o.weights;
  MMPT_ASSIGN_OR_RETURN(plan::Comparison comparison,
                        plan::ComparePlanners(table, model, o.config, o.steps));
  std::string text =
      o.json ? app::ComparisonJson(comparison) + "\n" : app::FormatComparison(comparison);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Status::OK();
}

}  // namespace

Command PlanCommand() {
  return {
      "plan",
      "Plan training steps from dataset metadata: vanilla vs mmpt packing, balance, step time",
      [](CLI::App& app) -> Action {
        auto o = std::make_shared<PlanOptions>();
        app.add_option("inputs", o->inputs,
                       "A prepared dataset directory, or metadata-only JSONL file(s): one object "
                       "per line with text_tokens (or text) and images [{width, height}]");
        app.add_option("--builtin", o->builtin,
                       fmt::format("Plan a corpus built from ../shared/data/real: {}",
                                   corpora::kBuiltinCorpusNames));
        o->layout.Add(app);
        o->presets.Add(app);
        app.add_option("--steps", o->steps, "Steps to plan")->capture_default_str();
        app.add_option("--seed", o->config.seed, "Seed of the sample order")->capture_default_str();
        app.add_option("--overlong", o->overlong, "Over-long samples: truncate or drop")
            ->capture_default_str();
        app.add_option("--max-samples", o->config.max_samples_per_pack, "Samples per pack (0: any)")
            ->capture_default_str();
        app.add_option("--max-images", o->config.max_images_per_pack, "Images per pack (0: any)")
            ->capture_default_str();
        app.add_option("--weights", o->weights, "Blend weight per source (default: by size)");
        AddVanillaBuffer(app, &o->config.vanilla_buffer);
        app.add_option("--pool-slack", o->config.pool_slack,
                       "mmpt: fraction of a step's tokens drawn beyond its capacity (choice of "
                       "packs; the rest carries over)")
            ->capture_default_str();
        AddAllowRepeat(app, &o->config.allow_repeat);
        AddJson(app, &o->json);
        return [o] { return Run(*o); };
      }};
}

}  // namespace mmpt::cli
