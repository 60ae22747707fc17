#include "mmpt/core/subprocess.h"

#include <array>
#include <cstdio>

#include <sys/wait.h>

namespace mmpt {

Result<std::string> RunCommand(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return Status::Internal("cannot run: {}", command);
  std::string out;
  std::array<char, 65536> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  const int rc = ::pclose(pipe);
  if (rc == -1) return Status::Internal("`{}`: cannot wait for it", command);
  if (WIFSIGNALED(rc)) {
    return Status::Internal("`{}` was killed by signal {}\n{}", command, WTERMSIG(rc), out);
  }
  if (WEXITSTATUS(rc) != 0) {
    return Status::Internal("`{}` exited with code {}\n{}", command, WEXITSTATUS(rc), out);
  }
  return out;
}

}  // namespace mmpt
