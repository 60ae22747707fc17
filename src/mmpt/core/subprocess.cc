#include "mmpt/core/subprocess.h"

#include <array>
#include <cstdio>

namespace mmpt {

Result<std::string> RunCommand(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return Status::Internal("cannot run: {}", command);
  std::string out;
  std::array<char, 65536> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  const int rc = ::pclose(pipe);
  if (rc != 0) return Status::Internal("`{}` exited with status {}\n{}", command, rc, out);
  return out;
}

}  // namespace mmpt
