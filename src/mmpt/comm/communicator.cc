#include "mmpt/comm/communicator.h"

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "mmpt/comm/in_process.h"
#include "mmpt/comm/mpi_communicator.h"

namespace mmpt::comm {

Status CheckHashesAgree(std::span<const uint64_t> hashes, uint64_t step) {
  if (hashes.empty()) return Status::InvalidArgument("plan agreement: no hashes gathered");
  std::string differing;
  size_t count = 0;
  for (size_t r = 1; r < hashes.size(); ++r) {
    if (hashes[r] == hashes[0]) continue;
    if (count++ < 8) {
      differing +=
          fmt::format("{}rank {} has {:016x}", differing.empty() ? "" : ", ", r, hashes[r]);
    }
  }
  if (count == 0) return Status::OK();
  if (count > 8) differing += fmt::format(" and {} more ranks", count - 8);
  return Status::Internal(
      "plans of step {} differ between ranks: rank 0 has plan hash {:016x}, {} ({} of {} ranks "
      "differ; same binary, dataset, config, seed and planner state on every rank?)",
      step, hashes[0], differing, count, hashes.size());
}

Status CheckPlanAgreement(Communicator& comm, uint64_t plan_hash, uint64_t step) {
  const uint64_t mine[1] = {plan_hash};
  MMPT_ASSIGN_OR_RETURN(std::vector<uint64_t> all, comm.AllGather(mine));
  return CheckHashesAgree(all, step);
}

namespace {

// True when an MPI launcher (OpenMPI's mpirun, or PMIx) started this process.
bool LaunchedByMpi(int* world_size) {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (size == nullptr) size = std::getenv("PMIX_SIZE");
  if (size != nullptr) {
    *world_size = std::atoi(size);
    return true;
  }
  *world_size = 1;
  return std::getenv("PMIX_RANK") != nullptr;
}

}  // namespace

Result<std::unique_ptr<Communicator>> WorldCommunicator() {
  int world_size = 1;
  if (!LaunchedByMpi(&world_size)) return SingleRankCommunicator();
  if (!MpiAvailable()) {
    if (world_size > 1) {
      return Status::InvalidArgument(
          "started by mpirun with {} ranks, but this mmpt was built without MPI "
          "(configure with -DMMPT_WITH_MPI=ON and Debian's libopenmpi-dev)",
          world_size);
    }
    return SingleRankCommunicator();
  }
  return MpiWorldCommunicator();
}

}  // namespace mmpt::comm
