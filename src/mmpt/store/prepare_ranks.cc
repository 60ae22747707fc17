// Prepare scaled out over the ranks of a communicator: parts, then one merged manifest.
#include <filesystem>

#include "mmpt/store/merge.h"
#include "mmpt/store/prepare.h"

namespace mmpt::store {

namespace {

// Every rank learns whether any rank failed, and which one first.
Result<uint32_t> FirstFailedRank(comm::Communicator& comm, bool failed) {
  std::vector<uint64_t> mine = {failed ? 1u : 0u};
  MMPT_ASSIGN_OR_RETURN(std::vector<uint64_t> all, comm.AllGather(mine));
  for (uint32_t r = 0; r < all.size(); ++r) {
    if (all[r] != 0) return r;
  }
  return comm.size();
}

}  // namespace

Result<PrepareReport> PrepareOnRanks(PrepareOptions options, comm::Communicator& comm) {
  options.part = comm.rank();
  options.num_parts = comm.size();
  options.progress = options.progress && comm.rank() == 0;
  if (comm.rank() == 0) {
    std::error_code error;
    std::filesystem::remove(std::filesystem::path(options.out_dir) / kManifestName, error);
  }
  auto report = Prepare(options);
  MMPT_ASSIGN_OR_RETURN(uint32_t failed, FirstFailedRank(comm, !report.ok()));
  if (failed < comm.size()) {
    if (!report.ok()) return report.status();
    return Status::Internal("prepare failed on rank {} of {}; see its error", failed, comm.size());
  }
  Status merged = Status::OK();
  if (comm.rank() == 0) merged = MergeDatasets(options.out_dir, {options.out_dir}).status();
  MMPT_ASSIGN_OR_RETURN(failed, FirstFailedRank(comm, !merged.ok()));
  if (failed < comm.size()) {
    if (!merged.ok()) return merged;
    return Status::Internal("merging the parts failed on rank 0; see its error");
  }
  return report;
}

}  // namespace mmpt::store
