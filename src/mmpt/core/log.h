#pragma once

#include <spdlog/spdlog.h>

namespace mmpt {

/// Set the process-wide log level from a name ("debug", "info", "warn", "error", "off").
/// Unknown names leave the level unchanged and return false.
bool SetLogLevel(std::string_view level_name);

}  // namespace mmpt

// Log to stderr through spdlog; messages use fmt syntax.
#define MMPT_LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#define MMPT_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define MMPT_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define MMPT_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
