#pragma once

// Read a given list of samples ahead of the consumer with N threads and a bound on the bytes
// in flight, delivering each sample's Result in list order.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/sample_view.h"

namespace mmpt::store {

struct PrefetchOptions {
  size_t threads = 4;
  /// Bound on the bytes of samples fetched but not yet released by the consumer: media bytes
  /// plus 4 bytes per token plus the JSON line. One sample larger than the bound still goes
  /// through, alone.
  uint64_t max_bytes_in_flight = uint64_t{256} << 20;
  /// Bound on the number of samples fetched but not yet released.
  size_t max_samples_in_flight = 1024;
  /// Read every page of the media so the consumer never waits on a page fault.
  bool touch_media = true;
};

struct PrefetchState;

/// One fetched sample. Its spans and the strings of `sample` point into the Dataset's mappings
/// (zero-copy; see SampleView), of the shard `held` holds open; its bytes count as in flight
/// until it is destroyed. Move-only.
class PrefetchedSample {
 public:
  PrefetchedSample() = default;
  ~PrefetchedSample();
  PrefetchedSample(PrefetchedSample&& other) noexcept;
  PrefetchedSample& operator=(PrefetchedSample&& other) noexcept;
  PrefetchedSample(const PrefetchedSample&) = delete;
  PrefetchedSample& operator=(const PrefetchedSample&) = delete;

  uint64_t index = 0;  // global sample index
  StoredSample held;
  SampleView sample;
  std::span<const int32_t> tokens;
  std::vector<std::span<const std::byte>> media;  // per sample.media item (empty: metadata-only)
  uint64_t size_bytes = 0;                        // what it counts against the bound

 private:
  friend class Prefetcher;
  void Release();
  std::shared_ptr<PrefetchState> state_;
};

/// Fetch `indices` of `dataset` in the background. Thread safety: Next is for one consumer
/// thread; Cancel may be called from any thread. The dataset must outlive the Prefetcher and
/// every PrefetchedSample it handed out.
class Prefetcher {
 public:
  Prefetcher(const Dataset& dataset, std::vector<uint64_t> indices, PrefetchOptions options = {});
  /// Cancel and join the workers.
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  /// The next sample in list order, waiting for it: the sample, or its error (OutOfRange for a
  /// bad index, Corrupt/IOError from the dataset) in its place; nullopt after the last one.
  /// After Cancel: a Cancelled status.
  std::optional<Result<PrefetchedSample>> Next();
  /// Stop fetching; pending and future Next calls return Cancelled.
  void Cancel();
  /// Bytes currently counted in flight (fetched or being fetched, not yet released).
  uint64_t bytes_in_flight() const;

 private:
  void Worker();

  const Dataset& dataset_;
  std::vector<uint64_t> indices_;
  PrefetchOptions options_;
  std::shared_ptr<PrefetchState> state_;
  std::vector<std::thread> workers_;
};

}  // namespace mmpt::store
