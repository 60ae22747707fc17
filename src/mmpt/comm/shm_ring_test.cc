#include "mmpt/comm/shm_ring.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

namespace mmpt::comm {
namespace {

using namespace std::chrono_literals;

std::string RingName(std::string_view test) {
  return fmt::format("/mmpt-test-{}-{}", getpid(), test);
}

ShmRingOptions Options(std::string_view test, std::vector<uint32_t> readers, uint32_t slots,
                       uint64_t capacity, std::chrono::milliseconds timeout = 5s) {
  ShmRingOptions options;
  options.name = RingName(test);
  options.writer_rank = 0;
  options.reader_ranks = std::move(readers);
  options.slots = slots;
  options.capacity_bytes = capacity;
  options.timeout = timeout;
  return options;
}

// Message m: m + 1 bytes... of varied length, each byte a function of (m, position).
uint64_t SizeOf(uint64_t m) { return 1 + (m * 397) % 1500; }
std::byte ByteOf(uint64_t m, uint64_t i) { return static_cast<std::byte>((m * 31 + i * 7) & 0xff); }

TEST(ShmRing, EveryReaderGetsEveryMessageInOrderAcrossWraps) {
  constexpr uint64_t kMessages = 200;
  auto writer = ShmRingWriter::Create(Options("order", {1, 2}, 4, 4096));
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  std::vector<uint64_t> received(2, 0);
  std::vector<std::string> errors(2);
  std::vector<std::thread> readers;
  for (uint32_t r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      auto reader = ShmRingReader::Open(RingName("order"), r, 5s);
      if (!reader.ok()) {
        errors[r] = reader.status().ToString();
        return;
      }
      while (true) {
        auto message = (*reader)->Next();
        if (!message.ok()) {
          errors[r] = message.status().ToString();
          return;
        }
        if (*message == nullptr) return;
        const uint64_t m = received[r];
        const auto bytes = (*message)->bytes();
        if ((*message)->seq() != m || bytes.size() != SizeOf(m) ||
            reinterpret_cast<uintptr_t>(bytes.data()) % 64 != 0) {
          errors[r] =
              fmt::format("message {}: seq {}, {} bytes", m, (*message)->seq(), bytes.size());
          return;
        }
        for (uint64_t i = 0; i < bytes.size(); ++i) {
          if (bytes[i] != ByteOf(m, i)) {
            errors[r] = fmt::format("message {} byte {} differs", m, i);
            return;
          }
        }
        ++received[r];
      }
    });
  }
  for (uint64_t m = 0; m < kMessages; ++m) {
    Status s = (*writer)->Write(SizeOf(m), [&](std::span<std::byte> out) {
      for (uint64_t i = 0; i < out.size(); ++i) out[i] = ByteOf(m, i);
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  (*writer)->Close();
  for (auto& t : readers) t.join();
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[r], "") << "reader " << r;
    EXPECT_EQ(received[r], kMessages) << "reader " << r;
  }
  // Both readers attached, so the name is gone from /dev/shm already.
  EXPECT_LT(shm_open(RingName("order").c_str(), O_RDONLY, 0), 0);
}

TEST(ShmRing, AHeldMessageBlocksTheWriterUntilTheTimeoutNamesTheReader) {
  auto writer = ShmRingWriter::Create(Options("held", {7}, 1, 4096, 300ms));
  ASSERT_TRUE(writer.ok());
  auto reader = ShmRingReader::Open(RingName("held"), 0, 1s);
  ASSERT_TRUE(reader.ok());
  auto fill = [](std::span<std::byte> out) { std::memset(out.data(), 1, out.size()); };
  ASSERT_TRUE((*writer)->Write(100, fill).ok());
  auto held = (*reader)->Next();
  ASSERT_TRUE(held.ok() && *held != nullptr);
  Status blocked = (*writer)->Write(100, fill);
  EXPECT_EQ(blocked.code(), StatusCode::kTimeout);
  EXPECT_NE(blocked.message().find("rank 7"), std::string::npos) << blocked.message();
  held->reset();  // released: the writer has room again
  EXPECT_TRUE((*writer)->Write(100, fill).ok());
  EXPECT_EQ((*writer)->Write(5000, fill).code(), StatusCode::kInvalidArgument);
}

TEST(ShmRing, TheWritersFailureReachesReadersAfterItsMessages) {
  auto writer = ShmRingWriter::Create(Options("fail", {1}, 4, 4096));
  ASSERT_TRUE(writer.ok());
  auto reader = ShmRingReader::Open(RingName("fail"), 0, 1s);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE((*writer)->Write(8, [](std::span<std::byte>) {}).ok());
  (*writer)->Fail(Status::Corrupt("sample coco/00000.jsonl:3 is bad"));
  auto first = (*reader)->Next();
  ASSERT_TRUE(first.ok() && *first != nullptr);
  auto second = (*reader)->Next();
  EXPECT_EQ(second.status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(second.status().message(), "sample coco/00000.jsonl:3 is bad");
}

TEST(ShmRing, AReaderWaitingForASilentWriterTimesOutNamingIt) {
  auto writer = ShmRingWriter::Create(Options("silent", {1}, 4, 4096, 5s));
  ASSERT_TRUE(writer.ok());
  auto reader = ShmRingReader::Open(RingName("silent"), 0, 200ms);
  ASSERT_TRUE(reader.ok());
  auto next = (*reader)->Next();
  EXPECT_EQ(next.status().code(), StatusCode::kTimeout);
  EXPECT_NE(next.status().message().find("rank 0"), std::string::npos);
  // No writer at all: opening times out naming the segment.
  auto none = ShmRingReader::Open(RingName("none"), 0, 50ms);
  EXPECT_EQ(none.status().code(), StatusCode::kTimeout);
}

TEST(ShmRing, AWriterThatExitsIsReportedAtOnceNotAfterTheTimeout) {
  const std::string name = RingName("dead");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto options = Options("dead", {3}, 4, 4096);
    options.name = name;
    options.writer_rank = 5;
    auto writer = ShmRingWriter::Create(options);
    if (!writer.ok()) _exit(1);
    (void)(*writer)->Write(8, [](std::span<std::byte>) {});
    _exit(0);  // no Close: as if killed
  }
  auto reader = ShmRingReader::Open(name, 0, 5s);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto first = (*reader)->Next();
  EXPECT_TRUE(first.ok() && *first != nullptr);
  const auto start = std::chrono::steady_clock::now();
  auto next = (*reader)->Next();  // the child is a zombie until reaped: still "exited"
  EXPECT_EQ(next.status().code(), StatusCode::kIOError) << next.status().ToString();
  EXPECT_NE(next.status().message().find("rank 5"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  int wstatus = 0;
  waitpid(child, &wstatus, 0);
  shm_unlink(name.c_str());
}

TEST(ShmRing, ABadConfigurationIsRefused) {
  EXPECT_EQ(ShmRingWriter::Create(Options("bad", {}, 4, 4096)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ShmRingWriter::Create(Options("bad", {1}, 0, 4096)).status().code(),
            StatusCode::kInvalidArgument);
  auto writer = ShmRingWriter::Create(Options("bad", {1}, 4, 4096));
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ(ShmRingReader::Open(RingName("bad"), 1, 1s).status().code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace mmpt::comm
