// `mmpt verify DIR`: check a dataset completely; exit status 0 only if it is intact.
#include "mmpt/store/verify.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "command.h"
#include "options.h"

namespace mmpt::cli {
namespace {

struct VerifyArgs {
  std::string dir;
  size_t threads = 0;
  bool json = false;
};

Status Run(const VerifyArgs& args) {
  store::VerifyReport report;
  MMPT_RETURN_IF_ERROR(store::VerifyDataset(args.dir, {args.threads, true}, &report));
  if (args.json) {
    nlohmann::ordered_json out = {{"dataset", args.dir},     {"ok", true},
                                  {"shards", report.shards}, {"samples", report.samples},
                                  {"media", report.media},   {"bytes", report.bytes}};
    std::printf("%s\n", out.dump(2).c_str());
    return Status::OK();
  }
  std::printf("OK: %s: %llu shards, %llu samples, %llu media, %llu bytes verified\n",
              args.dir.c_str(), static_cast<unsigned long long>(report.shards),
              static_cast<unsigned long long>(report.samples),
              static_cast<unsigned long long>(report.media),
              static_cast<unsigned long long>(report.bytes));
  return Status::OK();
}

}  // namespace

Command VerifyCommand() {
  return {"verify",
          "Check a dataset: checksums, index vs JSONL, zip CRCs, .meta vs zip; names the first "
          "damage",
          [](CLI::App& app) -> Action {
            auto args = std::make_shared<VerifyArgs>();
            AddDataset(app, &args->dir);
            AddThreads(app, &args->threads);
            AddJson(app, &args->json);
            return [args] { return Run(*args); };
          }};
}

}  // namespace mmpt::cli
