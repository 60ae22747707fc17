#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::cli {

/// What a subcommand's setup returns: the action to run once the command line is parsed.
using Action = std::function<Status()>;

/// One `mmpt` subcommand: its name, one-line summary, and a setup that declares its options on
/// the given CLI11 app (shared ones through options.h) and returns the action.
struct Command {
  std::string name;
  std::string summary;
  std::function<Action(CLI::App&)> setup;
};

/// Add `commands` as subcommands of `app`; the returned action runs the one the command line
/// named. `mmpt` and `mmpt bench` both dispatch through it.
Action AddSubcommands(CLI::App& app, const std::vector<Command>& commands);

// The subcommands, one per tools/mmpt/<name>.cc; main.cc lists them.
Command BenchCommand();
Command DemoCommand();
Command IndexCommand();
Command InspectCommand();
Command MergeCommand();
Command PlanCommand();
Command PrepareCommand();
Command SimulateCommand();
Command SynthCommand();
Command TokenizeCommand();
Command VerifyCommand();

}  // namespace mmpt::cli
