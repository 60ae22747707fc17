#include "mmpt/core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace mmpt {
namespace {

// Logs go to stderr so stdout stays clean for results that scripts parse. spdlog's registry is
// one per process, and two Python extension modules (_mmpt, _vision) each link this library: the
// second to load keeps the first's logger.
const bool kStderrLogger = [] {
  if (spdlog::get("mmpt") != nullptr) return true;
  auto logger = spdlog::stderr_color_mt("mmpt");
  logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::warn);
  return true;
}();

}  // namespace

bool SetLogLevel(std::string_view level_name) {
  auto level = spdlog::level::from_str(std::string(level_name));
  if (level == spdlog::level::off && level_name != "off") return false;
  spdlog::set_level(level);
  return true;
}

}  // namespace mmpt
