#pragma once

// The streaming exchange for node-local data: when each node holds only its own shards, the
// plan still decides which (DP rank, CP rank) trains on which sample; the peer that holds a
// sample sends its stored bytes (its line, token ids and the media as stored in the zip, still
// compressed) to the peers that train on it, one all-to-all-v per step, and they render and
// decode it with the code that reads shared storage. This file holds what is pure and native:
// which peer holds which shard (Placement), what each peer sends and receives at a step
// (ExchangeLists, from the plan alone, identical on every peer), the wire format, and the
// SampleSource that serves the received samples to the unchanged Loader. The collective itself
// runs in Python (mmpt.Exchange, torch.distributed).

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
#include "mmpt/load/dataset_source.h"
#include "mmpt/load/loader.h"
#include "mmpt/store/manifest.h"

namespace mmpt::load {

/// Which exchange peer (0..peers-1) holds the data files of each shard. Every peer has the
/// manifest and every shard's `.meta`; a shard's `.jsonl`, `.jsonl.idx`, `.zip` and `.tok`
/// only its holder needs.
class Placement {
 public:
  /// Shard i (manifest order) of `num_shards` on peer i mod `peers`. Errors: InvalidArgument
  /// for zero peers.
  static Result<Placement> RoundRobin(size_t num_shards, uint32_t peers);
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
/// place in the pack. Under CP a sample goes to each CP rank of its DP rank.
struct ExchangeLists {
  std::vector<std::vector<uint32_t>> send;     // per destination peer
  std::vector<std::vector<uint32_t>> receive;  // per holder peer
};

/// The shard (manifest order) that holds sample `index` of source `source`, as the planner
/// numbers samples. Errors: OutOfRange for a sample the dataset does not have.
using ShardOf = std::function<Result<size_t>(uint32_t source, uint64_t index)>;
/// `dataset`'s ShardOf (its `.meta` suffices).
ShardOf ShardsOf(const store::Dataset& dataset);

/// The lists of `peer` at `plan`'s step: peer p sends to the trainer of (DP rank d, CP rank c)
/// exactly the samples of d's packs whose shard p holds; each trainer receives all of its
/// packs' samples from their holders. `trainer_peer[d · cp + c]` is the peer that trains (d, c)
/// (dp × cp entries, distinct). A pure function of its inputs, O(the step's samples): every
/// peer computes its lists alike, with no communication. Errors: InvalidArgument
/// (trainer_peer of the wrong size, repeated or out of range; peer out of range), those of
/// `shard_of`, and OutOfRange for a shard outside the placement.
Result<ExchangeLists> PlanExchangeLists(const plan::StepPlan& plan, const Placement& placement,
                                        const ShardOf& shard_of,
                                        std::span<const uint32_t> trainer_peer, uint32_t peer);

/// Which media items of planned sample `sequence` (in pack `pack`) CP rank `cp_rank` decodes,
/// by the sample's media index (1: it does): the vision items and audio clips the plan's cp
/// stage assigns it (PackCp::vision, PackCp::audio); every item at CP 1. `media` is the
/// sample's `.meta` records; a grouped video is marked at its first record when the rank
/// decodes any of its groups, and never at the others (its bytes travel once). What the
/// exchange sends that rank.
std::vector<uint8_t> DecodedMedia(const plan::StepPlan& plan, size_t pack, uint32_t sequence,
                                  uint32_t cp_rank, std::span<const store::MediaMeta> media);

/// Wire format of one sample's stored bytes (little-endian 32-bit words, each field padded to
/// a word):
///   magic "MXS2", sequence (index in StepPlan::sequences), source, index (low, high word),
///   status code, message bytes, message;
///   then, when the status is OK: line bytes, the line; n, n token ids (`.tok`); m media
///   items; per item 0 (not sent: another CP rank decodes it) or 1, its size and its bytes.
/// The holder renders the sample first, checking everything a trainer's Render checks (ids
/// against `.tok`, every item's CRC and header against the plan); a sample that fails travels
/// as its error, so every CP rank drops or fails it by its bad-sample policy alike, exactly
/// as with shared storage.
inline constexpr uint32_t kExchangeRecordMagic = 0x3253584d;  // "MXS2"

/// Bytes of the record of a sample that rendered, with a line of `line_bytes`, `tokens` ids
/// and `media_items` items of which those sent have `sent_media_bytes` bytes each: what a
/// trainer can check it received.
uint64_t ExchangeRecordBytes(uint64_t line_bytes, uint32_t tokens, uint32_t media_items,
                             std::span<const uint64_t> sent_media_bytes);

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
  struct Sample {
    Status status;  // the holder's verdict
    std::string_view line;
    std::span<const int32_t> tokens;
    std::vector<std::optional<std::span<const std::byte>>> media;
  };
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

}  // namespace mmpt::load
