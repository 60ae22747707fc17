#pragma once

// The streaming exchange for node-local data: when each node holds only its own shards, the
// plan still decides which DP rank trains on which sample; the peer that holds a sample renders
// it and sends it to the peer that trains on it, one all-to-all-v per step. This file holds
// what is pure and native: which peer holds which shard (Placement), what each peer sends and
// receives at a step (ExchangeLists, from the plan alone, identical on every peer), the wire
// format of a rendered sample, and the SampleSource that serves the received samples to the
// unchanged Loader. The collective itself runs in Python (mmpt.Exchange, torch.distributed).

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/core/thread_pool.h"
#include "mmpt/load/dataset_source.h"
#include "mmpt/load/loader.h"
#include "mmpt/store/manifest.h"

namespace mmpt::load {

/// Which exchange peer (0..peers-1) holds the data files of each shard. Every peer has the
/// manifest and every shard's `.meta`; a shard's `.jsonl`, `.jsonl.idx`, `.zip` and `.tok`
/// only its holder needs.
class Placement {
 public:
  /// Shard i (manifest order) on peer i mod `peers`. Errors: InvalidArgument for zero peers.
  static Result<Placement> RoundRobin(const store::Manifest& manifest, uint32_t peers);
  /// Read a placement file: {"peers": P, "shards": {"<shard path as in mmpt.json>": peer}},
  /// naming every shard of `manifest`. Errors: NotFound/IOError (the file), Corrupt (not that
  /// JSON), InvalidArgument naming the file and the shard (a shard missing or unknown, a peer
  /// out of range).
  static Result<Placement> Read(const std::string& path, const store::Manifest& manifest);
  /// Write the placement file Read reads (atomically). Errors: IOError.
  Status Write(const std::string& path, const store::Manifest& manifest) const;

  uint32_t peers() const { return peers_; }
  size_t num_shards() const { return holder_.size(); }
  /// The peer holding shard `shard` (manifest order); `shard` < number of shards (unchecked).
  uint32_t holder(size_t shard) const { return holder_[shard]; }
  /// The shards `peer` holds, in manifest order.
  std::vector<size_t> ShardsOf(uint32_t peer) const;

 private:
  uint32_t peers_ = 0;
  std::vector<uint32_t> holder_;  // per shard
};

/// What one peer sends and receives at one step. Samples are named by their place in the
/// plan (an index into StepPlan::sequences), in plan order: DP rank, micro-step, pack slot,
/// place in the pack.
struct ExchangeLists {
  std::vector<std::vector<uint32_t>> send;     // per destination peer
  std::vector<std::vector<uint32_t>> receive;  // per holder peer
};

/// The lists of `peer` at `plan`'s step: peer p sends to the trainer of DP rank d exactly the
/// samples of d's packs whose shard p holds; the trainer of d receives all of its packs'
/// samples from their holders. `trainer_peer[d]` is the peer that trains DP rank d (dp
/// entries, distinct). A pure function of its inputs: every peer computes every peer's lists
/// alike, with no communication. `dataset` locates samples in shards (its `.meta` suffices).
/// Errors: InvalidArgument (trainer_peer of the wrong size, repeated or out of range; peer
/// out of range; CP > 1, which the exchange does not serve), OutOfRange for a planned sample
/// the dataset does not have.
Result<ExchangeLists> PlanExchangeLists(const plan::StepPlan& plan, const Placement& placement,
                                        const store::Dataset& dataset,
                                        std::span<const uint32_t> trainer_peer, uint32_t peer);

/// Wire format of one rendered sample (little-endian 32-bit words, so every record and its
/// pixel rows stay 4-byte aligned inside a buffer that is):
///   magic "MXS1", sequence (index in StepPlan::sequences), source, index (low, high word),
///   status code, message bytes, message (padded to 4 bytes);
///   then, when the status is OK: n tokens, n int32 ids, n loss bytes (padded to 4),
///   items; per image or video its RenderedVisual (token_start, token_count, grid_t, grid_h,
///   grid_w, sample_image, video 0/1, second_per_grid_t as float32 bits), a status code and message
///   as above, and when OK its grid_t·grid_h·grid_w × patch_dim float32 pixel rows.
/// A sample that failed to render travels as its error (code and message), and an image that
/// failed to decode as its own, so the trainer drops or fails it by its bad-sample policy
/// exactly as with shared storage.
inline constexpr uint32_t kExchangeRecordMagic = 0x3153584d;  // "MXS1"

/// Bytes of the record of a sample that rendered, with `tokens` ids, whose images all decoded
/// into `image_floats[i]` floats each: what a trainer can check it received.
uint64_t ExchangeRecordBytes(uint32_t tokens, std::span<const uint64_t> image_floats);

/// Counters of what the exchange moved, per peer (bytes include this peer's own share, which
/// does not leave the process).
struct ExchangeStats {
  std::vector<uint64_t> bytes_sent;      // per destination peer
  std::vector<uint64_t> bytes_received;  // per holder peer
  std::vector<uint64_t> samples_sent;
  std::vector<uint64_t> samples_received;
  uint64_t steps = 0;
};

/// The SampleSource of a trainer under the exchange: Render and FillPixels serve the samples
/// received for a step (Exchanger::Unpack), waiting for them when they have not arrived. The
/// Loader runs on it unchanged, so batches equal shared-storage batches byte for byte.
/// Thread safety: all methods may be called concurrently.
class ExchangeSource final : public SampleSource {
 public:
  ExchangeSource(uint32_t patch_dim, uint32_t merge_size, float tokens_per_second,
                 double timeout_seconds)
      : patch_dim_(patch_dim),
        merge_size_(merge_size),
        tokens_per_second_(tokens_per_second),
        timeout_seconds_(timeout_seconds) {}

  /// The received sample at its place in `plan`, or the error its holder sent. Waits for the
  /// step's samples. Errors: the holder's error for the sample; Timeout when the step has not
  /// arrived within the timeout; the exchange's failure (Fail); Internal for a sample that is
  /// not this rank's.
  Result<RenderedSample> Render(const plan::StepPlan& plan,
                                const plan::PlannedSequence& sequence) const override;
  /// Copy the received pixel rows of `image`, or return the error its holder sent.
  Status FillPixels(const RenderedSample& sample, const RenderedVisual& image,
                    std::span<float> out) const override;
  uint32_t patch_dim() const override { return patch_dim_; }
  uint32_t merge_size() const override { return merge_size_; }
  float tokens_per_second() const override { return tokens_per_second_; }

  /// Make every waiting and later Render fail with `status` (the exchange broke down).
  void Fail(Status status);
  /// Forget the steps before `step` (the loader is done with them).
  void Release(uint64_t step);
  /// Forget every step and any failure (the exchange restarts, perhaps under other plans).
  void Reset();

  /// What arrived for one step, as Exchanger::Unpack parsed it.
  struct Image {
    RenderedVisual image;
    Status status;                  // the holder's error decoding it
    std::span<const float> pixels;  // into Step::buffer
  };
  struct Sample {
    Status status;  // the holder's error rendering it
    RenderedSample rendered;
    std::vector<Image> images;
  };
  struct Step {
    std::vector<uint32_t> buffer;            // the received records, 4-byte aligned
    std::map<uint32_t, Sample> by_sequence;  // by index into StepPlan::sequences
    std::map<std::pair<uint32_t, uint64_t>, const Sample*> by_sample;  // (source, index)
  };
  /// Hold `received` as step `step`'s samples and wake the waiting Render calls.
  void Put(uint64_t step, std::shared_ptr<const Step> received);

 private:
  Result<std::shared_ptr<const Step>> Wait(uint64_t step) const;

  const uint32_t patch_dim_;
  const uint32_t merge_size_;
  const float tokens_per_second_;
  const double timeout_seconds_;
  mutable std::mutex mu_;
  mutable std::condition_variable arrived_;
  std::map<uint64_t, std::shared_ptr<const Step>> steps_;
  Status failed_;
};

class ExchangeBufferPool;

struct ExchangerOptions {
  uint32_t peer = 0;                   // this peer
  std::vector<uint32_t> trainer_peer;  // per DP rank, the peer that trains it
  uint32_t threads = 2;                // rendering the samples this peer sends
  double timeout_seconds = 120;        // a trainer waits this long for a step's samples
};

/// One peer's side of the exchange: renders what it sends at a step into one buffer (Pack)
/// and turns what it received into its ExchangeSource's samples (Unpack). Thread safety: Pack
/// and Unpack may run concurrently with the loader's use of source(); each is called from one
/// thread (the exchange's).
class Exchanger {
 public:
  /// `local` reads the shards this peer holds (others may be absent); `plans` must give
  /// every peer the same plans. Errors: InvalidArgument (options against the placement).
  static Result<std::unique_ptr<Exchanger>> Create(std::shared_ptr<const DatasetSource> local,
                                                   PlanFunction plans, Placement placement,
                                                   ExchangerOptions options);

  /// This peer's records for every peer at `step`, concatenated in peer order, and the bytes
  /// of each peer's part. A sample that fails to render is sent as its error. The buffer is
  /// valid until the next Pack: buffers are reused from step to step, since touching hundreds
  /// of MB of fresh pages every step costs more than rendering into warm ones.
  /// Errors: the plan's, the lists'.
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
            ExchangerOptions options);

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

}  // namespace mmpt::load
