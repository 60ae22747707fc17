#pragma once

// The few collectives mmpt needs between ranks. Planning needs none (every rank computes the
// same plan); they serve the plan agreement check, benchmark summaries and barriers.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::comm {

/// Reduction of an element-wise all-reduce.
enum class ReduceOp : uint8_t { kSum, kMin, kMax };

/// A group of ranks that take part in collectives. Every rank of the group must call the same
/// collectives in the same order with the same element counts (as in MPI); a rank that does
/// not join makes the others wait (the in-process group gives up after its timeout).
/// Thread safety: one thread per rank object at a time; different rank objects of an
/// in-process group are used from different threads.
class Communicator {
 public:
  virtual ~Communicator() = default;

  /// This rank's id, 0 ≤ rank() < size().
  virtual uint32_t rank() const = 0;
  /// Number of ranks in the group.
  virtual uint32_t size() const = 0;
  /// A name for messages and logs ("in-process", "mpi").
  virtual std::string_view kind() const = 0;

  /// Wait until every rank has reached the barrier. Errors: IOError (transport failure or, in
  /// process, a rank that did not arrive in time).
  virtual Status Barrier() = 0;
  /// Gather `values` (the same count on every rank) from every rank to every rank: the result
  /// holds size() × values.size() elements, rank by rank. Errors: as Barrier, InvalidArgument
  /// when the counts differ between ranks (detected in process; undefined under MPI, as there).
  virtual Result<std::vector<uint64_t>> AllGather(std::span<const uint64_t> values) = 0;
  /// Reduce `values` element-wise over every rank, in place on every rank. Errors: as AllGather.
  virtual Status AllReduce(std::span<double> values, ReduceOp op) = 0;
};

/// Check that every rank's plan hash of step `step` is the same, given the hashes gathered
/// from every rank in rank order. Rank 0's hash is the reference. Errors: Internal naming the
/// step and every rank whose hash differs from rank 0's, with both hashes in hex.
Status CheckHashesAgree(std::span<const uint64_t> hashes, uint64_t step);

/// Gather `plan_hash` from every rank of `comm` and check that they agree (CheckHashesAgree):
/// the check every rank runs before loading a step. Every rank gets the same verdict.
/// Errors: those of AllGather and CheckHashesAgree.
Status CheckPlanAgreement(Communicator& comm, uint64_t plan_hash, uint64_t step);

/// The communicator of this process: an MPI one over MPI_COMM_WORLD when mmpt is built with
/// MMPT_WITH_MPI and the process runs under mpirun (OMPI_COMM_WORLD_SIZE or PMIX_RANK set),
/// else a group of one rank. Errors: Internal when MPI cannot be initialized; InvalidArgument
/// when launched by mpirun with more than one rank but built without MPI (each process would
/// otherwise silently act as rank 0 of 1).
Result<std::unique_ptr<Communicator>> WorldCommunicator();

}  // namespace mmpt::comm
