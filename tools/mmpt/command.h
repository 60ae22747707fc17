#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "mmpt/core/status.h"

namespace mmpt::cli {

/// What a subcommand's setup returns: the action to run once the command line is parsed.
using Action = std::function<Status()>;

/// One `mmpt` subcommand: its name, one-line summary, and a setup that declares its options on
/// the given CLI11 app and returns the action.
struct Command {
  std::string name;
  std::string summary;
  std::function<Action(CLI::App&)> setup;
};

/// Add a subcommand to the `mmpt` binary. Each tools/mmpt/<name>.cc calls this once from a
/// static initializer, so adding a subcommand touches no other file.
bool RegisterCommand(Command command);

/// Every registered subcommand, sorted by name.
std::vector<Command>& Commands();

}  // namespace mmpt::cli
