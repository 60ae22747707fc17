// `mmpt index DIR`: write the planning table (`mmpt.plan`) of a dataset prepared before it
// existed, then its manifest: the dataset's one conversion, which says what it did.
#include <cstdio>

#include "command.h"
#include "mmpt/store/manifest.h"
#include "mmpt/store/planning_table.h"
#include "options.h"

namespace mmpt::cli {
namespace {

Status Run(const std::string& dir) {
  MMPT_ASSIGN_OR_RETURN(store::Manifest manifest, store::ReadManifest(dir));
  if (manifest.planning) {
    MMPT_RETURN_IF_ERROR(store::OpenPlanningTable(dir, manifest).status());
    std::printf("%s: already indexed: %s/%s is its planning table; nothing written\n", dir.c_str(),
                dir.c_str(), store::kPlanningTableName);
    return Status::OK();
  }
  MMPT_RETURN_IF_ERROR(store::FinishDataset(dir, std::move(manifest)));
  MMPT_ASSIGN_OR_RETURN(store::Manifest indexed, store::ReadManifest(dir));
  std::printf(
      "%s: converted: wrote %s/%s (%llu bytes, %llu samples), then %s/%s naming it; ranks now "
      "map it instead of building the table in memory\n",
      dir.c_str(), dir.c_str(), store::kPlanningTableName,
      static_cast<unsigned long long>(indexed.planning->bytes),
      static_cast<unsigned long long>(indexed.num_samples()), dir.c_str(), store::kManifestName);
  return Status::OK();
}

}  // namespace

Command IndexCommand() {
  return {"index",
          "Write the planning table (mmpt.plan) of a dataset prepared before it existed; the "
          "manifest is rewritten last, so a dataset is never half-converted",
          [](CLI::App& app) -> Action {
            auto dir = std::make_shared<std::string>();
            AddDataset(app, dir.get());
            return [dir] { return Run(*dir); };
          }};
}

}  // namespace mmpt::cli
