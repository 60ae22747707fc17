// `mmpt merge OUT PART...`: join independently prepared parts into one dataset (no copying).
#include "mmpt/ingest/merge.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "command.h"
#include "options.h"

namespace mmpt::cli {
namespace {

struct MergeArgs {
  std::string out;
  std::vector<std::string> parts;
  bool json = false;
};

Status Run(const MergeArgs& args) {
  MMPT_ASSIGN_OR_RETURN(store::Manifest merged, ingest::MergeDatasets(args.out, args.parts));
  if (args.json) {
    nlohmann::ordered_json out = {{"dataset", args.out},
                                  {"shards", merged.shards.size()},
                                  {"samples", merged.num_samples()},
                                  {"sources", merged.sources()}};
    std::printf("%s\n", out.dump(2).c_str());
    return Status::OK();
  }
  std::printf("merged %zu shards, %llu samples from %zu sources into %s/mmpt.json\n",
              merged.shards.size(), static_cast<unsigned long long>(merged.num_samples()),
              merged.sources().size(), args.out.c_str());
  return Status::OK();
}

}  // namespace

Command MergeCommand() {
  return {
      "merge",
      "Join independently prepared dataset parts into one manifest, without copying shards",
      [](CLI::App& app) -> Action {
        auto args = std::make_shared<MergeArgs>();
        app.add_option("--out", args->out, "Dataset directory to write mmpt.json into")->required();
        app.add_option("parts", args->parts,
                       "Part directories (mmpt.json or mmpt.part-*.json inside) or manifest "
                       "files")
            ->required();
        AddJson(app, &args->json);
        return [args] { return Run(*args); };
      }};
}

}  // namespace mmpt::cli
