#pragma once

// A communicator whose ranks are threads of one process: for tests, and for single-process
// runs. Collectives meet in shared memory under one mutex.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "mmpt/comm/communicator.h"

namespace mmpt::comm {

/// The shared state of an in-process group of `size` ranks; hands out one Communicator per
/// rank. Thread safety: Rank() may be called from any thread; each returned communicator is
/// used by one thread (its rank's). The group must outlive its communicators.
class InProcessGroup {
 public:
  /// A group of `size` ≥ 1 ranks. A collective that waits longer than `timeout` for the other
  /// ranks fails with IOError naming the ranks that did not arrive, rather than hang.
  explicit InProcessGroup(uint32_t size,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));
  ~InProcessGroup();
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  uint32_t size() const { return size_; }
  /// The communicator of rank `rank` < size() (checked); owned by the group.
  Communicator& Rank(uint32_t rank);

 private:
  class RankComm;
  friend class RankComm;

  // What a collective round computes from the ranks' contributions.
  enum class Combine : uint8_t { kGather, kSumDouble, kMinDouble, kMaxDouble };

  // One collective round: every rank deposits `contribution` (raw 64-bit words), the last to
  // arrive combines them, every rank copies the result out. Errors: IOError on timeout (and in
  // every later round), InvalidArgument when the contributions differ in size.
  Result<std::vector<uint64_t>> Exchange(uint32_t rank, std::vector<uint64_t> contribution,
                                         Combine combine);

  // The error every collective returns once a round has timed out (mu_ held).
  Status Broken() const;

  const uint32_t size_;
  const std::chrono::milliseconds timeout_;
  std::vector<std::unique_ptr<RankComm>> ranks_;

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;  // rounds completed
  uint32_t arrived_ = 0;     // ranks that deposited in the current round
  uint32_t departed_ = 0;    // ranks that copied the result of the finished round
  bool result_ready_ = false;
  bool broken_ = false;        // a round timed out: every later collective fails at once
  std::string broken_reason_;  // the timeout that broke the group, repeated to every rank
  std::vector<std::vector<uint64_t>> contributions_;
  std::vector<bool> present_;
  Result<std::vector<uint64_t>> result_ = Status::Internal("no collective has run");
};

/// A communicator of one rank (rank 0 of 1): every collective returns at once.
std::unique_ptr<Communicator> SingleRankCommunicator();

}  // namespace mmpt::comm
