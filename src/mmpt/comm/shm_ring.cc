#include "mmpt/comm/shm_ring.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

namespace mmpt::comm {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMagic = 0x474e'4952'5450'4d4dull;  // "MMPTRING"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxReaders = 64;
constexpr uint64_t kAlign = 64;
// A wait sleeps at most this long before it checks its peer is alive and its deadline.
constexpr std::chrono::milliseconds kSlice{100};

enum State : uint32_t { kOpen = 0, kClosed = 1, kFailed = 2 };

struct ReaderEntry {
  std::atomic<int32_t> pid;  // 0 until the reader attaches
  uint32_t rank;
};

struct Slot {
  std::atomic<uint64_t> seq;
  uint64_t offset;
  uint64_t size;
  std::atomic<uint64_t> pending;  // bit i: reader i has not released the message
};

struct RingHeader {
  std::atomic<uint64_t> magic;  // written last by the writer
  uint32_t version;
  uint32_t readers;
  uint32_t slots;
  uint32_t writer_rank;
  int32_t writer_pid;
  uint32_t reserved;
  uint64_t capacity;
  uint64_t data_offset;
  uint64_t total_size;
  std::atomic<uint64_t> published;     // messages published
  std::atomic<uint32_t> publish_word;  // bumped on every publish and state change (futex)
  std::atomic<uint32_t> release_word;  // bumped on every release (futex)
  std::atomic<uint32_t> state;
  int32_t error_code;
  char error[2048];
  ReaderEntry reader[kMaxReaders];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

uint64_t AlignUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

void FutexWait(std::atomic<uint32_t>* word, uint32_t seen, std::chrono::milliseconds wait) {
  timespec ts{static_cast<time_t>(wait.count() / 1000),
              static_cast<long>(wait.count() % 1000) * 1'000'000};
  // Not FUTEX_PRIVATE: the word is shared between processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

// Whether process `pid` still runs (an exited, unreaped child is a zombie: not running).
bool Running(int32_t pid) {
  if (pid <= 0) return true;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // no procfs: trust kill()
  const size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ||
         (line[paren + 2] != 'Z' && line[paren + 2] != 'X');
}

double Seconds(std::chrono::milliseconds ms) { return ms.count() / 1000.0; }

}  // namespace

// The mapping of one ring, kept alive by the ring object and every message it handed out.
struct ShmRingSegment {
  std::string name;
  std::byte* base = nullptr;
  uint64_t size = 0;

  ~ShmRingSegment() {
    if (base != nullptr) munmap(base, size);
  }
  RingHeader& header() const { return *reinterpret_cast<RingHeader*>(base); }
  Slot& slot(uint64_t seq) const {
    auto* slots = reinterpret_cast<Slot*>(base + AlignUp(sizeof(RingHeader), kAlign));
    return slots[seq % header().slots];
  }
  std::byte* data() const { return base + header().data_offset; }
};

// ---- writer ----

ShmRingWriter::ShmRingWriter(std::shared_ptr<ShmRingSegment> segment,
                             std::chrono::milliseconds timeout)
    : segment_(std::move(segment)), timeout_(timeout) {}

Result<std::unique_ptr<ShmRingWriter>> ShmRingWriter::Create(const ShmRingOptions& options) {
  const size_t readers = options.reader_ranks.size();
  if (readers == 0 || readers > kMaxReaders || options.slots == 0 || options.capacity_bytes == 0) {
    return Status::InvalidArgument(
        "shared-memory ring {}: {} readers (1 to {}), {} slots, {} bytes: none may be zero",
        options.name, readers, kMaxReaders, options.slots, options.capacity_bytes);
  }
  const uint64_t data_offset =
      AlignUp(AlignUp(sizeof(RingHeader), kAlign) + options.slots * sizeof(Slot), 4096);
  const uint64_t capacity = AlignUp(options.capacity_bytes, kAlign);
  const uint64_t total = data_offset + capacity;
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) == 0 && uint64_t{fs.f_bavail} * fs.f_frsize < total) {
    return Status::IOError(
        "shared-memory ring {} needs {} bytes but /dev/shm has {} free: raise the container's "
        "shared memory (docker --shm-size) or lower the ring's bytes",
        options.name, total, uint64_t{fs.f_bavail} * fs.f_frsize);
  }
  shm_unlink(options.name.c_str());  // a stale segment of a job that died
  const int fd = shm_open(options.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    return Status::IOError("shm_open {}: {}", options.name, std::strerror(errno));
  }
  // Allocate every page now: a full /dev/shm is an error here, never a SIGBUS mid-run, and
  // writes never pay for first touches.
  if (const int err = posix_fallocate(fd, 0, static_cast<off_t>(total)); err != 0) {
    close(fd);
    shm_unlink(options.name.c_str());
    return Status::IOError("shared-memory ring {}: cannot allocate {} bytes in /dev/shm: {}",
                           options.name, total, std::strerror(err));
  }
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    shm_unlink(options.name.c_str());
    return Status::IOError("mmap of shared-memory ring {} ({} bytes): {}", options.name, total,
                           std::strerror(errno));
  }
  auto segment = std::make_shared<ShmRingSegment>();
  segment->name = options.name;
  segment->base = static_cast<std::byte*>(base);
  segment->size = total;
  // Fresh pages are zero, so every atomic starts at 0.
  RingHeader& h = segment->header();
  h.version = kVersion;
  h.readers = static_cast<uint32_t>(readers);
  h.slots = options.slots;
  h.writer_rank = options.writer_rank;
  h.writer_pid = getpid();
  h.capacity = capacity;
  h.data_offset = data_offset;
  h.total_size = total;
  h.error_code = 0;
  for (size_t i = 0; i < readers; ++i) h.reader[i].rank = options.reader_ranks[i];
  h.magic.store(kMagic, std::memory_order_release);
  auto writer =
      std::unique_ptr<ShmRingWriter>(new ShmRingWriter(std::move(segment), options.timeout));
  return writer;
}

ShmRingWriter::~ShmRingWriter() {
  if (segment_->header().state.load() == kOpen) {
    Fail(Status::Cancelled("rank {} stopped loading (its loader was closed)",
                           segment_->header().writer_rank));
  }
  if (!unlinked_) shm_unlink(segment_->name.c_str());
}

void ShmRingWriter::UnlinkOnceAttached() {
  if (unlinked_) return;
  const RingHeader& h = segment_->header();
  for (uint32_t i = 0; i < h.readers; ++i) {
    if (h.reader[i].pid.load(std::memory_order_acquire) == 0) return;
  }
  shm_unlink(segment_->name.c_str());
  unlinked_ = true;
}

Status ShmRingWriter::WaitForRoom(uint64_t size, uint64_t& offset) {
  RingHeader& h = segment_->header();
  const Clock::time_point start = Clock::now();
  while (true) {
    const uint32_t seen = h.release_word.load(std::memory_order_acquire);
    while (!in_flight_.empty() &&
           segment_->slot(in_flight_.front().seq).pending.load(std::memory_order_acquire) == 0) {
      in_flight_.erase(in_flight_.begin());
    }
    if (in_flight_.empty()) head_ = 0;
    if (in_flight_.size() < h.slots) {
      const uint64_t at = head_ + size <= h.capacity ? head_ : 0;
      const bool overlaps = std::any_of(in_flight_.begin(), in_flight_.end(), [&](auto& m) {
        return at < m.offset + m.size && m.offset < at + size;
      });
      if (!overlaps) {
        offset = at;
        return Status::OK();
      }
    }
    // Wait for the oldest message's readers.
    const InFlight& oldest = in_flight_.front();
    const uint64_t pending = segment_->slot(oldest.seq).pending.load(std::memory_order_acquire);
    std::string holders;
    for (uint32_t i = 0; i < h.readers; ++i) {
      if ((pending >> i & 1) == 0) continue;
      const int32_t pid = h.reader[i].pid.load(std::memory_order_acquire);
      if (!Running(pid)) {
        return Status::IOError(
            "rank {} (pid {}) exited holding message {} of shared-memory ring {}", h.reader[i].rank,
            pid, oldest.seq, segment_->name);
      }
      holders += fmt::format("{}rank {}{}", holders.empty() ? "" : ", ", h.reader[i].rank,
                             pid == 0 ? " (never attached)" : "");
    }
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (waited >= timeout_) {
      return Status::Timeout(
          "{} still held message {} of shared-memory ring {} after {:.1f} s: they fell behind, "
          "hang, or keep their batches (the ring holds {} messages, {} bytes)",
          holders, oldest.seq, segment_->name, Seconds(timeout_), h.slots, h.capacity);
    }
    FutexWait(&h.release_word, seen, std::min(kSlice, timeout_ - waited));
  }
}

Status ShmRingWriter::Write(uint64_t size, const std::function<void(std::span<std::byte>)>& fill) {
  RingHeader& h = segment_->header();
  if (h.state.load() != kOpen) {
    return Status::InvalidArgument("shared-memory ring {} is already closed", segment_->name);
  }
  const uint64_t room = AlignUp(std::max<uint64_t>(size, 1), kAlign);
  if (room > h.capacity) {
    return Status::InvalidArgument(
        "a message of {} bytes does not fit shared-memory ring {} of {} bytes (raise max_bytes)",
        size, segment_->name, h.capacity);
  }
  uint64_t offset = 0;
  MMPT_RETURN_IF_ERROR(WaitForRoom(room, offset));
  fill(std::span<std::byte>(segment_->data() + offset, size));
  Slot& slot = segment_->slot(written_);
  slot.offset = offset;
  slot.size = size;
  slot.pending.store(h.readers == 64 ? ~uint64_t{0} : (uint64_t{1} << h.readers) - 1,
                     std::memory_order_relaxed);
  slot.seq.store(written_, std::memory_order_relaxed);
  in_flight_.push_back({written_, offset, room});
  head_ = offset + room;
  ++written_;
  h.published.store(written_, std::memory_order_release);
  h.publish_word.fetch_add(1, std::memory_order_release);
  FutexWakeAll(&h.publish_word);
  UnlinkOnceAttached();
  return Status::OK();
}

void ShmRingWriter::Close() {
  RingHeader& h = segment_->header();
  h.state.store(kClosed, std::memory_order_release);
  h.publish_word.fetch_add(1, std::memory_order_release);
  FutexWakeAll(&h.publish_word);
}

void ShmRingWriter::Fail(const Status& error) {
  RingHeader& h = segment_->header();
  h.error_code = static_cast<int32_t>(error.code());
  const std::string& message = error.message();
  const size_t n = std::min(message.size(), sizeof(h.error) - 1);
  std::memcpy(h.error, message.data(), n);
  h.error[n] = '\0';
  h.state.store(kFailed, std::memory_order_release);
  h.publish_word.fetch_add(1, std::memory_order_release);
  FutexWakeAll(&h.publish_word);
}

// ---- messages ----

ShmMessage::ShmMessage(std::shared_ptr<ShmRingSegment> segment, uint64_t seq, uint32_t reader,
                       std::span<const std::byte> bytes)
    : segment_(std::move(segment)), seq_(seq), reader_(reader), bytes_(bytes) {}

ShmMessage::~ShmMessage() {
  RingHeader& h = segment_->header();
  segment_->slot(seq_).pending.fetch_and(~(uint64_t{1} << reader_), std::memory_order_release);
  h.release_word.fetch_add(1, std::memory_order_release);
  FutexWakeAll(&h.release_word);
}

// ---- reader ----

ShmRingReader::ShmRingReader(std::shared_ptr<ShmRingSegment> segment, uint32_t reader,
                             std::chrono::milliseconds timeout)
    : segment_(std::move(segment)), reader_(reader), timeout_(timeout) {}

ShmRingReader::~ShmRingReader() = default;

uint32_t ShmRingReader::writer_rank() const { return segment_->header().writer_rank; }

Result<std::unique_ptr<ShmRingReader>> ShmRingReader::Open(const std::string& name, uint32_t reader,
                                                           std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (true) {
    const int fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd >= 0) {
      struct stat st {};
      const bool sized =
          fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) > sizeof(RingHeader);
      void* base = sized ? mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE,
                                MAP_SHARED | MAP_POPULATE, fd, 0)
                         : MAP_FAILED;
      close(fd);
      if (base != MAP_FAILED) {
        auto segment = std::make_shared<ShmRingSegment>();
        segment->name = name;
        segment->base = static_cast<std::byte*>(base);
        segment->size = st.st_size;
        RingHeader& h = segment->header();
        if (h.magic.load(std::memory_order_acquire) == kMagic) {
          if (h.version != kVersion || h.total_size != segment->size || h.readers > kMaxReaders) {
            return Status::Corrupt("{} is not an mmpt shared-memory ring of version {}", name,
                                   kVersion);
          }
          if (reader >= h.readers) {
            return Status::Corrupt("shared-memory ring {} has {} readers; reader {} is not one",
                                   name, h.readers, reader);
          }
          h.reader[reader].pid.store(getpid(), std::memory_order_release);
          // The last to attach unlinks the name too, in case the writer dies before it sees
          // everyone attached: nothing is left in /dev/shm.
          bool all = true;
          for (uint32_t i = 0; i < h.readers; ++i) {
            all = all && h.reader[i].pid.load(std::memory_order_acquire) != 0;
          }
          if (all || !Running(h.writer_pid)) shm_unlink(name.c_str());
          return std::unique_ptr<ShmRingReader>(
              new ShmRingReader(std::move(segment), reader, timeout));
        }
      }
    }
    if (Clock::now() >= deadline) {
      return Status::Timeout(
          "shared-memory ring {} did not appear within {:.1f} s: the rank that loads for this "
          "one did not start it",
          name, Seconds(timeout));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Result<std::shared_ptr<ShmMessage>> ShmRingReader::Next() {
  RingHeader& h = segment_->header();
  const Clock::time_point start = Clock::now();
  while (true) {
    const uint32_t seen = h.publish_word.load(std::memory_order_acquire);
    if (h.published.load(std::memory_order_acquire) > next_) break;
    const uint32_t state = h.state.load(std::memory_order_acquire);
    if (state == kClosed) return std::shared_ptr<ShmMessage>();
    if (state == kFailed) {
      return Status(static_cast<StatusCode>(h.error_code), std::string(h.error));
    }
    if (!Running(h.writer_pid)) {
      shm_unlink(segment_->name.c_str());  // the writer cannot any more
      return Status::IOError(
          "rank {} (pid {}), which loads these batches, exited before publishing message {} "
          "of shared-memory ring {}",
          h.writer_rank, h.writer_pid, next_, segment_->name);
    }
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (waited >= timeout_) {
      return Status::Timeout(
          "rank {} (pid {}), which loads these batches, published no message {} of "
          "shared-memory ring {} within {:.1f} s: it fell behind or hangs",
          h.writer_rank, h.writer_pid, next_, segment_->name, Seconds(timeout_));
    }
    FutexWait(&h.publish_word, seen, std::min(kSlice, timeout_ - waited));
  }
  Slot& slot = segment_->slot(next_);
  if (slot.seq.load(std::memory_order_acquire) != next_ || slot.offset > h.capacity ||
      slot.size > h.capacity - slot.offset) {
    return Status::Corrupt("shared-memory ring {}: slot of message {} is inconsistent",
                           segment_->name, next_);
  }
  auto message = std::make_shared<ShmMessage>(
      segment_, next_, reader_,
      std::span<const std::byte>(segment_->data() + slot.offset, slot.size));
  ++next_;
  return message;
}

}  // namespace mmpt::comm
