// `mmpt verify DIR`: check a dataset completely; exit status 0 only if it is intact.
#include <cstdio>

#include "command.h"
#include "mmpt/store/verify.h"

namespace mmpt::cli {
namespace {

struct VerifyArgs {
  std::string dir;
  size_t jobs = 0;
};

Status Run(const VerifyArgs& args) {
  store::VerifyReport report;
  MMPT_RETURN_IF_ERROR(store::VerifyDataset(args.dir, {args.jobs, true}, &report));
  std::printf("OK: %s: %llu shards, %llu samples, %llu media, %llu bytes verified\n",
              args.dir.c_str(), static_cast<unsigned long long>(report.shards),
              static_cast<unsigned long long>(report.samples),
              static_cast<unsigned long long>(report.media),
              static_cast<unsigned long long>(report.bytes));
  return Status::OK();
}

const bool registered = RegisterCommand({
    "verify",
    "Check a dataset: checksums, index vs JSONL, zip CRCs, .meta vs zip; names the first damage",
    [](CLI::App& app) -> Action {
      auto args = std::make_shared<VerifyArgs>();
      app.add_option("dir", args->dir, "Dataset directory (holding mmpt.json)")->required();
      app.add_option("--jobs", args->jobs, "Worker threads (0: one per core)")->capture_default_str();
      return [args] { return Run(*args); };
    },
});

}  // namespace
}  // namespace mmpt::cli
