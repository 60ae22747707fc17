#pragma once

#include <string>

#include "mmpt/core/status.h"

namespace mmpt {

/// Run `command` through the shell and return what it wrote to stdout (add `2>&1` to the
/// command to capture stderr too). For benchmarks' baselines and tests' reference tools, not
/// for hot paths. Errors: Internal when it cannot start or exits non-zero, with the command,
/// its exit status and its output.
Result<std::string> RunCommand(const std::string& command);

}  // namespace mmpt
