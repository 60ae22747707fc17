#pragma once

// A single-writer, many-reader ring of messages in POSIX shared memory, for ranks on one node
// to share what one of them loaded. Bounded in bytes and in messages; readers view a message in
// place (no copy) and hold it until they release it; the writer reuses its bytes once every
// reader has. Waits are futexes on the shared words, in slices, so a writer or reader that dies
// or falls behind turns into a clear error naming its rank instead of a hang.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::comm {

struct ShmRingOptions {
  /// POSIX shared-memory name ("/mmpt-..."): unique per job and ring; every rank derives it.
  std::string name;
  uint32_t writer_rank = 0;              // for messages: "rank 0 (pid 123)"
  std::vector<uint32_t> reader_ranks;    // reader i's global rank; 1 to 64 readers
  uint32_t slots = 8;                    // messages written but not released by all, at most
  uint64_t capacity_bytes = 1ull << 30;  // bytes of those messages, at most
  /// How long the writer waits for room and a reader for the writer (or for the ring to
  /// appear) before failing, naming the rank it waited for.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

struct ShmRingSegment;  // the mapping, shared by the ring object and its messages

/// The writer's end. Creating it replaces a stale segment of the same name; the name is
/// unlinked once every reader has attached (or when the writer goes), so nothing is left in
/// /dev/shm after the job, however it ends.
class ShmRingWriter {
 public:
  /// Errors: InvalidArgument (no readers or more than 64, zero slots or capacity), IOError
  /// (shm_open, ftruncate or mmap failed, naming the segment).
  static Result<std::unique_ptr<ShmRingWriter>> Create(const ShmRingOptions& options);
  ~ShmRingWriter();
  ShmRingWriter(const ShmRingWriter&) = delete;
  ShmRingWriter& operator=(const ShmRingWriter&) = delete;

  /// Append a message of `size` bytes, 64-byte aligned, written by `fill` in place, once there
  /// is room. Errors: InvalidArgument (larger than the ring), DeadlineExceeded naming each
  /// reader that still holds the oldest message after the timeout, Aborted naming a reader
  /// that died holding it.
  Status Write(uint64_t size, const std::function<void(std::span<std::byte>)>& fill);
  /// The stream ends: readers get nullopt after the last message.
  void Close();
  /// The stream fails: readers get `error` (its code and message) after the last message.
  void Fail(const Status& error);

 private:
  ShmRingWriter(std::shared_ptr<ShmRingSegment> segment, std::chrono::milliseconds timeout);
  Status WaitForRoom(uint64_t size, uint64_t& offset);
  void UnlinkOnceAttached();

  std::shared_ptr<ShmRingSegment> segment_;
  std::chrono::milliseconds timeout_;
  struct InFlight {
    uint64_t seq, offset, size;
  };
  std::vector<InFlight> in_flight_;  // oldest first
  uint64_t head_ = 0;                // where the next message starts, unless it wraps
  uint64_t written_ = 0;
  bool unlinked_ = false;
};

/// A message a reader holds: its bytes stay valid and unreused until it is destroyed.
class ShmMessage {
 public:
  ShmMessage(std::shared_ptr<ShmRingSegment> segment, uint64_t seq, uint32_t reader,
             std::span<const std::byte> bytes);
  ~ShmMessage();
  ShmMessage(const ShmMessage&) = delete;
  ShmMessage& operator=(const ShmMessage&) = delete;

  std::span<const std::byte> bytes() const { return bytes_; }
  uint64_t seq() const { return seq_; }

 private:
  std::shared_ptr<ShmRingSegment> segment_;
  uint64_t seq_;
  uint32_t reader_;
  std::span<const std::byte> bytes_;
};

/// Reader `reader` (its index in ShmRingOptions::reader_ranks) of a ring.
class ShmRingReader {
 public:
  /// Attach to `name`, waiting up to `timeout` for the writer to create it. Errors:
  /// DeadlineExceeded naming the segment, Corrupt when it is not a ring or `reader` is not one
  /// of its readers.
  static Result<std::unique_ptr<ShmRingReader>> Open(const std::string& name, uint32_t reader,
                                                     std::chrono::milliseconds timeout);
  ~ShmRingReader();

  /// The next message, waiting for it; nullptr after Close. Errors: the writer's Fail status;
  /// DeadlineExceeded or Aborted naming the writer's rank when it publishes nothing within the
  /// timeout or has exited.
  Result<std::shared_ptr<ShmMessage>> Next();
  uint32_t writer_rank() const;

 private:
  ShmRingReader(std::shared_ptr<ShmRingSegment> segment, uint32_t reader,
                std::chrono::milliseconds timeout);

  std::shared_ptr<ShmRingSegment> segment_;
  uint32_t reader_;
  std::chrono::milliseconds timeout_;
  uint64_t next_ = 0;
};

}  // namespace mmpt::comm
