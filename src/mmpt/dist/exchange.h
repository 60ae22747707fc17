#pragma once

// The streaming exchange for node-local data: when each node holds only its own shards, the
// plan still decides which (DP rank, CP rank) trains on which sample; the peer that holds a
// sample sends its stored bytes (its line, token ids and the media as stored in the zip, still
// compressed) to the peers that train on it, one all-to-all-v per step, and they render and
// decode it with the code that reads shared storage. Which peer holds which shard is
// placement.h; what each peer sends and receives at a step, from the plan alone, is
// exchange_lists.h; the records' format is exchange_wire.h. This file holds the Exchanger that
// packs and unpacks a step's records, and the SampleSource that serves the received samples to
// the unchanged Loader. The collective itself runs in Python (mmpt.Exchange,
// torch.distributed).

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/core/thread_pool.h"
#include "mmpt/dist/exchange_lists.h"
#include "mmpt/dist/exchange_wire.h"
#include "mmpt/dist/placement.h"
#include "mmpt/load/dataset_source.h"
#include "mmpt/load/loader.h"
#include "mmpt/store/manifest.h"

namespace mmpt::dist {

using load::AudioFeatureShape;
using load::DatasetSource;
using load::PlanFunction;
using load::RenderedAudio;
using load::RenderedSample;
using load::RenderedVisual;
using load::SampleSource;
using load::StoredBytes;

/// Counters of what the exchange moved, per peer (bytes include this peer's own share, which
/// does not leave the process).
struct ExchangeStats {
  std::vector<uint64_t> bytes_sent;      // per destination peer
  std::vector<uint64_t> bytes_received;  // per holder peer
  std::vector<uint64_t> samples_sent;
  std::vector<uint64_t> samples_received;
  uint64_t steps = 0;
};

/// The stored bytes of the samples received for the steps a trainer holds (Exchanger::Unpack
/// puts them), as a StoredBytes for the trainer's DatasetSource. Thread safety: all methods
/// may be called concurrently.
class ReceivedBytes final : public StoredBytes {
 public:
  explicit ReceivedBytes(double timeout_seconds) : timeout_seconds_(timeout_seconds) {}

  Result<std::string_view> Line(uint64_t global) const override;
  Result<std::span<const int32_t>> Tokens(uint64_t global) const override;
  Result<std::optional<std::span<const std::byte>>> Media(uint64_t global,
                                                          uint32_t k) const override;

  /// What arrived for one step, as Exchanger::Unpack parsed it: views into `buffer`.
  using Sample = ReceivedSample;
  struct Step {
    std::vector<uint32_t> buffer;          // the received records, 4-byte aligned
    std::map<uint64_t, Sample> by_global;  // by the dataset's global index
  };
  /// Hold `received` as step `step`'s samples and wake the waiting Wait calls.
  void Put(uint64_t step, std::shared_ptr<const Step> received);
  /// Block until step `step` arrived. Errors: the exchange's failure (Fail); Timeout.
  Status Wait(uint64_t step) const;
  /// Make every waiting and later Wait fail with `status` (the exchange broke down).
  void Fail(Status status);
  /// Forget the steps before `step` (the loader is done with them).
  void Release(uint64_t step);
  /// Forget every step and any failure (the exchange restarts, perhaps under other plans).
  void Reset();

 private:
  // The newest held copy of sample `global` (a sample drawn again carries the same bytes)
  // that holds media item `media` when given, else the newest.
  Result<const Sample*> Find(uint64_t global, std::optional<uint32_t> media = {}) const;

  const double timeout_seconds_;
  mutable std::mutex mu_;
  mutable std::condition_variable arrived_;
  std::map<uint64_t, std::shared_ptr<const Step>> steps_;
  Status failed_;
};

/// The SampleSource of a trainer under the exchange: a DatasetSource reading the received
/// stored bytes (ReceivedBytes) instead of shards, so the Loader runs on it unchanged and its
/// batches equal shared-storage batches byte for byte. Render waits for the step's samples.
/// Thread safety: all methods may be called concurrently.
class ExchangeSource final : public SampleSource {
 public:
  ExchangeSource(std::shared_ptr<const DatasetSource> reader,
                 std::shared_ptr<ReceivedBytes> received)
      : reader_(std::move(reader)), received_(std::move(received)) {}

  /// Waits for the plan's step, then renders. Errors: the holder's error for the sample;
  /// Timeout when the step has not arrived within the timeout; the exchange's failure.
  Result<RenderedSample> Render(const plan::StepPlan& plan,
                                const plan::PlannedSequence& sequence) const override {
    MMPT_RETURN_IF_ERROR(received_->Wait(plan.step));
    return reader_->Render(plan, sequence);
  }
  Status FillPixels(const RenderedSample& sample, const RenderedVisual& image,
                    std::span<float> out) const override {
    return reader_->FillPixels(sample, image, out);
  }
  Status FillAudio(const RenderedSample& sample, const RenderedAudio& audio, uint32_t frames,
                   std::span<float> features, std::span<int32_t> mask) const override {
    return reader_->FillAudio(sample, audio, frames, features, mask);
  }
  AudioFeatureShape audio_features() const override { return reader_->audio_features(); }
  uint32_t patch_dim() const override { return reader_->patch_dim(); }
  uint32_t merge_size() const override { return reader_->merge_size(); }
  float tokens_per_second() const override { return reader_->tokens_per_second(); }

  ReceivedBytes& received() const { return *received_; }

 private:
  const std::shared_ptr<const DatasetSource> reader_;
  const std::shared_ptr<ReceivedBytes> received_;
};

class ExchangeBufferPool;

struct ExchangerOptions {
  uint32_t peer = 0;                   // this peer
  std::vector<uint32_t> trainer_peer;  // per (DP rank d, CP rank c), at d · cp + c: its peer
  uint32_t threads = 2;                // checking and copying the samples this peer sends
  double timeout_seconds = 120;        // a trainer waits this long for a step's samples
};

/// One peer's side of the exchange: packs the stored bytes of what it sends at a step into
/// one buffer (Pack) and turns what it received into its ExchangeSource's samples (Unpack).
/// Thread safety: Pack and Unpack may run concurrently with the loader's use of source(); each
/// is called from one thread (the exchange's).
class Exchanger {
 public:
  /// `local` reads the shards this peer holds (others may be absent); `plans` must give
  /// every peer the same plans. Errors: InvalidArgument (options against the placement), and
  /// those of making the trainer's DatasetSource.
  static Result<std::unique_ptr<Exchanger>> Create(std::shared_ptr<const DatasetSource> local,
                                                   PlanFunction plans, Placement placement,
                                                   ExchangerOptions options);

  /// This peer's records for every peer at `step`, concatenated in peer order, and the bytes
  /// of each peer's part. The buffer is valid until the next Pack. Errors: the plan's, the
  /// lists'.
  struct Outgoing {
    std::span<const std::byte> buffer;
    std::vector<uint64_t> bytes;  // per destination peer
  };
  Result<Outgoing> Pack(uint64_t step);
  /// A buffer for what arrives at `step`, `bytes[q]` from peer q in peer order, for the caller
  /// (the all-to-all-v) to fill before Unpack(step); valid until then.
  std::span<std::byte> Receive(uint64_t step, std::span<const uint64_t> bytes);
  /// Parse what Receive(step)'s buffer holds and hand it to source(). Errors: Corrupt naming
  /// the peer and step for records that are not the ones the plan's lists expect, or are cut
  /// short; InvalidArgument when Receive(step) came before.
  Status Unpack(uint64_t step);
  /// The lists of this peer at `step`.
  Result<ExchangeLists> Lists(uint64_t step);

  const std::shared_ptr<ExchangeSource>& source() const { return source_; }
  const PlanFunction& plans() const { return plans_; }
  const Placement& placement() const { return placement_; }
  uint32_t peer() const { return options_.peer; }
  ExchangeStats stats() const;

 private:
  Exchanger(std::shared_ptr<const DatasetSource> local, PlanFunction plans, Placement placement,
            ExchangerOptions options, std::shared_ptr<ExchangeSource> source);
  // The CP rank the peer `destination` trains (its place in trainer_peer, modulo CP).
  uint32_t CpRankOf(uint32_t destination, uint32_t cp) const;

  const std::shared_ptr<const DatasetSource> local_;
  const PlanFunction plans_;
  const Placement placement_;
  const ExchangerOptions options_;
  const std::shared_ptr<ExchangeSource> source_;
  ThreadPool pool_;
  const std::shared_ptr<ExchangeBufferPool> buffers_;  // received steps' buffers, for reuse
  std::vector<std::vector<uint32_t>> records_;         // Pack's, one per sample sent
  std::vector<uint32_t> send_;                         // Pack's
  uint64_t pending_step_ = UINT64_MAX;                 // Receive's, until Unpack
  std::vector<uint64_t> pending_bytes_;
  std::vector<uint32_t> pending_;
  mutable std::mutex mu_;
  ExchangeStats stats_;
};

}  // namespace mmpt::dist
