// `mmpt inspect DIR [--json]`: samples, media and tokens per source, from the .meta tables.
#include <cstdio>

#include "command.h"
#include "mmpt/store/inspect.h"

namespace mmpt::cli {
namespace {

struct InspectArgs {
  std::string dir;
  bool json = false;
};

Status Run(const InspectArgs& args) {
  MMPT_ASSIGN_OR_RETURN(store::Dataset dataset, store::Dataset::Open(args.dir));
  MMPT_ASSIGN_OR_RETURN(store::InspectReport report, store::Inspect(dataset));
  std::string text = args.json ? store::RenderInspectJson(report) : store::RenderInspectText(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Status::OK();
}

const bool registered = RegisterCommand({
    "inspect",
    "Summarize a dataset: samples, media, text and image tokens per source, histograms",
    [](CLI::App& app) -> Action {
      auto args = std::make_shared<InspectArgs>();
      app.add_option("dir", args->dir, "Dataset directory (holding mmpt.json)")->required();
      app.add_flag("--json", args->json, "Print JSON for scripts");
      return [args] { return Run(*args); };
    },
});

}  // namespace
}  // namespace mmpt::cli
