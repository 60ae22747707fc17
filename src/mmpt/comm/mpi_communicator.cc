#include "mmpt/comm/mpi_communicator.h"

#ifdef MMPT_WITH_MPI

#include <mpi.h>

#include <mutex>
#include <string>
#include <vector>

namespace mmpt::comm {
namespace {

// Turn an MPI error code into a Status naming the call.
Status MpiStatus(int code, const char* call) {
  if (code == MPI_SUCCESS) return Status::OK();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Status::IOError("{} failed: {}", call, std::string(text, length));
}

std::mutex g_mpi_mu;
int g_live_communicators = 0;
bool g_we_initialized = false;

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(uint32_t rank, uint32_t size) : rank_(rank), size_(size) {}
  ~MpiCommunicator() override {
    std::lock_guard lock(g_mpi_mu);
    if (--g_live_communicators == 0 && g_we_initialized) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    }
  }

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }
  std::string_view kind() const override { return "mpi"; }

  Status Barrier() override { return MpiStatus(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  Result<std::vector<uint64_t>> AllGather(std::span<const uint64_t> values) override {
    std::vector<uint64_t> all(values.size() * size_);
    MMPT_RETURN_IF_ERROR(MpiStatus(
        MPI_Allgather(values.data(), static_cast<int>(values.size()), MPI_UINT64_T, all.data(),
                      static_cast<int>(values.size()), MPI_UINT64_T, MPI_COMM_WORLD),
        "MPI_Allgather"));
    return all;
  }

  Status AllReduce(std::span<double> values, ReduceOp op) override {
    MPI_Op mpi_op = op == ReduceOp::kSum ? MPI_SUM : op == ReduceOp::kMin ? MPI_MIN : MPI_MAX;
    return MpiStatus(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()),
                                   MPI_DOUBLE, mpi_op, MPI_COMM_WORLD),
                     "MPI_Allreduce");
  }

 private:
  uint32_t rank_;
  uint32_t size_;
};

}  // namespace

bool MpiAvailable() { return true; }

Result<std::unique_ptr<Communicator>> MpiWorldCommunicator() {
  std::lock_guard lock(g_mpi_mu);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      return Status::Internal("MPI_Init_thread failed");
    }
    g_we_initialized = true;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MMPT_RETURN_IF_ERROR(MpiStatus(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank"));
  MMPT_RETURN_IF_ERROR(MpiStatus(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size"));
  ++g_live_communicators;
  return std::unique_ptr<Communicator>(
      new MpiCommunicator(static_cast<uint32_t>(rank), static_cast<uint32_t>(size)));
}

}  // namespace mmpt::comm

#else  // !MMPT_WITH_MPI

namespace mmpt::comm {

bool MpiAvailable() { return false; }

Result<std::unique_ptr<Communicator>> MpiWorldCommunicator() {
  return Status::Internal(
      "this mmpt was built without MPI; configure with -DMMPT_WITH_MPI=ON (Debian's "
      "libopenmpi-dev)");
}

}  // namespace mmpt::comm

#endif  // MMPT_WITH_MPI
