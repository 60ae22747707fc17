// The `mmpt` command: parses the command line, runs one subcommand, and turns its Status into
// one clear error line and a non-zero exit code.
#include <cstdio>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "command.h"
#include "mmpt/core/log.h"

namespace mmpt::cli {

Action AddSubcommands(CLI::App& app, const std::vector<Command>& commands) {
  app.require_subcommand(1);
  auto actions = std::make_shared<std::vector<std::pair<CLI::App*, Action>>>();
  for (const Command& command : commands) {
    CLI::App* sub = app.add_subcommand(command.name, command.summary);
    actions->emplace_back(sub, command.setup(*sub));
  }
  return [actions]() -> Status {
    for (auto& [sub, action] : *actions) {
      if (!sub->parsed()) continue;
      try {
        return action();
      } catch (const std::exception& e) {
        return Status::Internal("unexpected exception: {}", e.what());
      }
    }
    return Status::InvalidArgument("name a subcommand (--help lists them)");
  };
}

}  // namespace mmpt::cli

int main(int argc, char** argv) {
  using namespace mmpt::cli;
  CLI::App app{
      "mmpt: fast data, packing and balancing for multimodal (vision-language) pretraining.\n"
      "Run `mmpt <command> --help` for a command's options."};
  app.set_version_flag("--version", "mmpt " MMPT_VERSION);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "Log level: debug, info, warn, error, off")
      ->capture_default_str();
  const Action run =
      AddSubcommands(app, {BenchCommand(), DemoCommand(), IndexCommand(), InspectCommand(),
                           MergeCommand(), PlanCommand(), PrepareCommand(), SimulateCommand(),
                           SynthCommand(), TokenizeCommand(), VerifyCommand()});
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!mmpt::SetLogLevel(log_level)) {
    std::fprintf(stderr, "mmpt: error: unknown --log-level '%s'\n", log_level.c_str());
    return 2;
  }
  const mmpt::Status status = run();
  if (!status.ok()) {
    std::fprintf(stderr, "mmpt %s: error: %s\n", app.get_subcommands().front()->get_name().c_str(),
                 status.ToString().c_str());
    return 1;
  }
  return 0;
}
