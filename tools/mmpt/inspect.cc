// `mmpt inspect DIR [--json]`: samples, media and tokens per source, from the .meta tables.
#include "mmpt/store/inspect.h"
#include "mmpt/app/reports.h"

#include <cstdio>

#include "command.h"
#include "options.h"

namespace mmpt::cli {
namespace {

struct InspectArgs {
  std::string dir;
  bool json = false;
};

Status Run(const InspectArgs& args) {
  MMPT_ASSIGN_OR_RETURN(store::Dataset dataset, store::Dataset::Open(args.dir));
  MMPT_ASSIGN_OR_RETURN(store::InspectReport report, store::Inspect(dataset));
  std::string text = args.json ? app::RenderInspectJson(report) : app::RenderInspectText(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Status::OK();
}

}  // namespace

Command InspectCommand() {
  return {"inspect",
          "Summarize a dataset: samples, media, text and image tokens per source, histograms",
          [](CLI::App& app) -> Action {
            auto args = std::make_shared<InspectArgs>();
            AddDataset(app, &args->dir);
            AddJson(app, &args->json);
            return [args] { return Run(*args); };
          }};
}

}  // namespace mmpt::cli
