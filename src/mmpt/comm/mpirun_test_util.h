#pragma once

// For `dist`-tier tests that start processes under OpenMPI's mpirun: the one way they launch,
// so every such test runs alike in CI containers (as root, with more ranks than cores).
// Needs MMPT_MPIEXEC, the launcher CMake found (src/mmpt/comm/CMakeLists.txt defines it for
// the test binaries that use this header).

#include <fmt/format.h>

#include <string>

namespace mmpt::comm::testing {

/// The shell prefix that runs the command after it as `ranks` processes under mpirun on this
/// machine: allowed as root (OMPI_ALLOW_RUN_AS_ROOT), oversubscribed (ranks may exceed cores).
inline std::string MpirunPrefix(int ranks) {
  return fmt::format(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 {} --oversubscribe -np {} ",
      MMPT_MPIEXEC, ranks);
}

}  // namespace mmpt::comm::testing
