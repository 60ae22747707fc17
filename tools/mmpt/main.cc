// The `mmpt` command: parses the command line, runs one subcommand, and turns its Status into
// one clear error line and a non-zero exit code.
#include <algorithm>
#include <cstdio>
#include <exception>

#include "command.h"
#include "mmpt/core/log.h"

namespace mmpt::cli {

std::vector<Command>& Commands() {
  static std::vector<Command> commands;
  return commands;
}

bool RegisterCommand(Command command) {
  Commands().push_back(std::move(command));
  return true;
}

}  // namespace mmpt::cli

int main(int argc, char** argv) {
  using namespace mmpt::cli;
  CLI::App app{
      "mmpt: fast data, packing and balancing for multimodal (vision-language) pretraining.\n"
      "Run `mmpt <command> --help` for a command's options."};
  app.set_version_flag("--version", "mmpt " MMPT_VERSION);
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "Log level: debug, info, warn, error, off")
      ->capture_default_str();

  auto& commands = Commands();
  std::sort(commands.begin(), commands.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, Action>> actions;
  for (auto& command : commands) {
    CLI::App* sub = app.add_subcommand(command.name, command.summary);
    actions.emplace_back(sub, command.setup(*sub));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!mmpt::SetLogLevel(log_level)) {
    std::fprintf(stderr, "mmpt: error: unknown --log-level '%s'\n", log_level.c_str());
    return 2;
  }
  for (auto& [sub, action] : actions) {
    if (!sub->parsed()) continue;
    mmpt::Status status;
    try {
      status = action();
    } catch (const std::exception& e) {
      status = mmpt::Status::Internal("unexpected exception: {}", e.what());
    }
    if (!status.ok()) {
      std::fprintf(stderr, "mmpt %s: error: %s\n", sub->get_name().c_str(), status.ToString().c_str());
      return 1;
    }
    return 0;
  }
  return 0;
}
