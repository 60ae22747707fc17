// Prepare scaled out over the ranks of a communicator: parts, then one merged manifest.
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "mmpt/ingest/merge.h"
#include "mmpt/ingest/prepare.h"

namespace mmpt::ingest {

namespace fs = std::filesystem;

namespace {

// Longest part of an error message passed between ranks, in bytes.
constexpr size_t kMaxSharedMessage = 4096;

// Every rank learns the error of the first rank (in rank order) whose `mine` is not OK, as
// "rank R of N: <message>" with that rank's code, or OK when every rank succeeded. Shared, so
// that whichever rank's output a launcher shows names the bad record (under mpirun the other
// ranks may be killed as soon as one exits). Collective; a failed AllGather is returned too.
Status FirstError(comm::Communicator& comm, const Status& mine) {
  const std::string_view message = std::string_view(mine.message()).substr(0, kMaxSharedMessage);
  const uint64_t head[2] = {mine.ok() ? 0 : message.size() + 1, static_cast<uint64_t>(mine.code())};
  MMPT_ASSIGN_OR_RETURN(std::vector<uint64_t> heads, comm.AllGather(head));
  uint32_t failed = 0;
  while (failed < comm.size() && heads[2 * failed] == 0) ++failed;
  if (failed == comm.size()) return Status::OK();
  // The failed rank's message as 8-byte words; every rank sends the same count.
  const size_t bytes = heads[2 * failed] - 1;
  std::vector<uint64_t> words((bytes + 7) / 8, 0);
  if (comm.rank() == failed && bytes > 0) std::memcpy(words.data(), message.data(), bytes);
  MMPT_ASSIGN_OR_RETURN(std::vector<uint64_t> all, comm.AllGather(words));
  std::string text(bytes, '\0');
  if (bytes > 0) std::memcpy(text.data(), all.data() + failed * words.size(), bytes);
  return Status(static_cast<StatusCode>(heads[2 * failed + 1]),
                fmt::format("rank {} of {}: {}", failed, comm.size(), text));
}

}  // namespace

Result<PrepareReport> PrepareOnRanks(PrepareOptions options, comm::Communicator& comm) {
  options.part = comm.rank();
  options.num_parts = comm.size();
  options.progress = options.progress && comm.rank() == 0;
  const fs::path out(options.out_dir);
  const fs::path my_part = out / PartManifestName(comm.rank(), comm.size());
  std::error_code error;
  // A stale manifest would describe shards the ranks are about to overwrite: it goes before
  // any rank writes.
  if (comm.rank() == 0) fs::remove(out / store::kManifestName, error);
  MMPT_RETURN_IF_ERROR(comm.Barrier());
  auto report = Prepare(options);
  Status failed = FirstError(comm, report.status());
  if (!failed.ok()) {
    // The parts that did finish would merge into a dataset missing the failed rank's shards.
    // Every rank removes its part before any returns: a launcher may kill the others as soon
    // as one rank exits with an error.
    fs::remove(my_part, error);
    MMPT_RETURN_IF_ERROR(comm.Barrier());
    return failed;
  }
  // Rank 0 merges exactly this run's parts (not stale ones of a run with another rank count),
  // then removes them, so the directory holds one manifest.
  Status merged = Status::OK();
  if (comm.rank() == 0) {
    std::vector<std::string> parts;
    for (uint32_t r = 0; r < comm.size(); ++r) {
      parts.push_back((out / PartManifestName(r, comm.size())).string());
    }
    merged = MergeDatasets(options.out_dir, parts).status();
    for (const std::string& part : parts) fs::remove(part, error);
  }
  MMPT_RETURN_IF_ERROR(FirstError(comm, merged));
  return report;
}

}  // namespace mmpt::ingest
