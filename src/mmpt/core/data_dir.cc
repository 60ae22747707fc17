#include "mmpt/core/data_dir.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>

namespace mmpt {
namespace {

namespace fs = std::filesystem;

// The file holding this code: the shared object it was loaded from (the Python extension), or,
// when it is linked into the executable (whose link map entry has no name), the executable.
fs::path CodeFile() {
  Dl_info info;
  link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(&CodeFile), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) != 0 &&
      map != nullptr && map->l_name != nullptr && map->l_name[0] != '\0') {
    return map->l_name;
  }
  return "/proc/self/exe";
}

}  // namespace

Result<std::string> DataDir() {
  std::error_code ec;
  if (const char* home = std::getenv("MMPT_HOME"); home != nullptr && home[0] != '\0') {
    if (!fs::is_directory(home, ec))
      return Status::NotFound("$MMPT_HOME={} is not a directory", home);
    return std::string(home);
  }
  // canonical() resolves links, so a symlink to the executable finds the data of its install.
  const fs::path code = fs::canonical(CodeFile(), ec);
  if (ec)
    return Status::NotFound("mmpt's data directory: cannot resolve {}: {}", CodeFile().string(),
                            ec.message());
  for (fs::path dir = code.parent_path();; dir = dir.parent_path()) {
    const fs::path candidate = dir / "share" / "mmpt";
    if (fs::is_directory(candidate, ec)) return candidate.string();
    if (dir == dir.parent_path()) break;
  }
  return Status::NotFound(
      "mmpt's data directory not found: no share/mmpt at or above {} (install mmpt with "
      "`cmake --install`, or set $MMPT_HOME to a directory holding presets/ and tokenizer.json)",
      code.parent_path().string());
}

Result<std::string> PresetDir() {
  MMPT_ASSIGN_OR_RETURN(std::string dir, DataDir());
  return dir + "/presets";
}

}  // namespace mmpt
