#include "mmpt/store/prefetcher.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

#include "mmpt/corpora/synth.h"
#include "mmpt/ingest/prepare.h"
#include "mmpt/store/store_test_util.h"

namespace mmpt::store {
namespace {

using testing::FreshDir;

// A prepared tiny corpus of `samples` caption pairs, shared by the tests of one binary run.
const Dataset& TinyDataset() {
  static Dataset* dataset = [] {
    std::string corpus = FreshDir("prefetch_corpus");
    std::string out = FreshDir("prefetch_out");
    corpora::SynthOptions synth;
    synth.profile = "tiny";
    synth.out_dir = corpus;
    synth.samples = 40;
    synth.min_side = 32;
    synth.max_side = 160;
    synth.threads = 2;
    auto report = corpora::Synthesize(synth);
    MMPT_CHECK(report.ok());
    static testing::WordTokenizer tokenizer;
    ingest::PrepareOptions options;
    options.inputs = {{report->path, "tiny"}};
    options.out_dir = out;
    options.tokenizer = &tokenizer;
    options.samples_per_shard = 16;
    options.threads = 2;
    options.progress = false;
    MMPT_CHECK(ingest::Prepare(options).ok());
    return new Dataset(Dataset::Open(out).ValueOrDie());
  }();
  return *dataset;
}

// The key of sample `i`, read directly.
std::string KeyOf(const Dataset& dataset, uint64_t i) {
  SampleView view;
  MMPT_CHECK(dataset.Sample(i)->Read(view).ok());
  return std::string(view.key);
}

TEST(PrefetcherTest, DeliversInListOrderWithErrorsInPlace) {
  const Dataset& dataset = TinyDataset();
  std::vector<uint64_t> indices = {5, 0, 39, 1000, 17, 5};
  Prefetcher prefetcher(dataset, indices, {.threads = 3});
  for (size_t p = 0; p < indices.size(); ++p) {
    auto next = prefetcher.Next();
    ASSERT_TRUE(next.has_value());
    if (indices[p] >= dataset.num_samples()) {
      ASSERT_FALSE(next->ok());
      EXPECT_EQ(next->status().code(), StatusCode::kOutOfRange);
      continue;
    }
    ASSERT_TRUE(next->ok()) << next->status().ToString();
    EXPECT_EQ((*next)->index, indices[p]);
    EXPECT_EQ((*next)->sample.key, KeyOf(dataset, indices[p]));
    ASSERT_EQ((*next)->media.size(), 1u);
    EXPECT_EQ((*next)->media[0].data(), dataset.Sample(indices[p])->Media(0)->data());  // zero-copy
  }
  EXPECT_FALSE(prefetcher.Next().has_value());
}

TEST(PrefetcherTest, BytesInFlightStayUnderTheBound) {
  const Dataset& dataset = TinyDataset();
  uint64_t largest = 0;
  for (uint64_t i = 0; i < dataset.num_samples(); ++i) {
    largest = std::max<uint64_t>(largest, dataset.Sample(i)->media()[0].data_size);
  }
  const uint64_t bound = 2 * largest + 4096;
  std::vector<uint64_t> indices(400);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = (i * 7) % dataset.num_samples();
  Prefetcher prefetcher(dataset, indices, {.threads = 4, .max_bytes_in_flight = bound});
  std::vector<PrefetchedSample> held;  // the consumer holds two at a time
  size_t delivered = 0;
  while (auto next = prefetcher.Next()) {
    ASSERT_TRUE(next->ok());
    EXPECT_LE(prefetcher.bytes_in_flight(), bound);
    held.push_back(std::move(**next));
    if (held.size() > 2) held.erase(held.begin());
    ++delivered;
  }
  EXPECT_EQ(delivered, indices.size());
  held.clear();
  EXPECT_EQ(prefetcher.bytes_in_flight(), 0u);
}

TEST(PrefetcherTest, CancelStopsWaitingConsumersAndWorkers) {
  const Dataset& dataset = TinyDataset();
  std::vector<uint64_t> indices(100000, 3);
  auto prefetcher = std::make_unique<Prefetcher>(
      dataset, indices, PrefetchOptions{.threads = 2, .max_samples_in_flight = 4});
  auto first = prefetcher->Next();
  ASSERT_TRUE(first && first->ok());
  PrefetchedSample kept = std::move(**first);
  prefetcher->Cancel();
  auto after = prefetcher->Next();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->status().code(), StatusCode::kCancelled);
  prefetcher.reset();  // joins without hanging; `kept` outlives it safely
  EXPECT_EQ(kept.sample.key, KeyOf(dataset, 3));
}

long ResidentKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

long PeakKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Resident memory stays flat over a million reads: after warm-up, growth is bounded by a few
// MiB of allocator noise, not by the number of reads.
TEST(PrefetcherSlow, MemoryFlatOverOneMillionReads) {
  const Dataset& dataset = TinyDataset();
  constexpr size_t kReads = 1000000;
  std::vector<uint64_t> indices(kReads);
  std::mt19937_64 rng(1);
  for (uint64_t& i : indices) i = rng() % dataset.num_samples();
  Prefetcher prefetcher(dataset, std::move(indices),
                        {.threads = 2, .max_bytes_in_flight = 1 << 20});
  long warm = 0;
  size_t delivered = 0;
  uint64_t checksum = 0;
  while (auto next = prefetcher.Next()) {
    ASSERT_TRUE(next->ok());
    checksum += (*next)->sample.segments.size();
    if (++delivered == 20000) warm = ResidentKiB();
  }
  long end = ResidentKiB();
  EXPECT_EQ(delivered, kReads);
  EXPECT_GT(checksum, 0u);
  std::printf(
      "prefetcher: %zu reads, RSS after 20k reads %ld KiB, at end %ld KiB, growth %ld KiB, "
      "peak %ld KiB\n",
      delivered, warm, end, end - warm, PeakKiB());
  EXPECT_LT(end - warm, 8 * 1024) << "resident memory grew with the number of reads";
}

}  // namespace
}  // namespace mmpt::store
