#include "mmpt/dist/exchange.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mmpt/core/mapped_file.h"

namespace mmpt::dist {

using namespace load;  // the loader and the Batch this module carries between ranks

namespace {

// Render planned sample `k` of `plan` from the holder's own shards (every check a trainer's
// Render makes) and gather its stored bytes.
Result<StoredSample> ReadStored(const DatasetSource& local, const plan::StepPlan& plan,
                                uint32_t k) {
  const plan::PlannedSequence& seq = plan.sequences[k];
  MMPT_RETURN_IF_ERROR(local.Render(plan, seq).status());
  const store::Dataset& dataset = local.dataset();
  MMPT_ASSIGN_OR_RETURN(uint64_t global, dataset.GlobalIndex(seq.source, seq.index));
  StoredSample stored;
  MMPT_ASSIGN_OR_RETURN(stored.held, dataset.Sample(global));
  MMPT_ASSIGN_OR_RETURN(stored.line, stored.held.Line());
  MMPT_ASSIGN_OR_RETURN(stored.tokens, stored.held.Tokens());
  for (size_t m = 0; m < stored.held.media().size(); ++m) {
    MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> bytes, stored.held.Media(m));
    stored.media.push_back(bytes);
  }
  return stored;
}

}  // namespace

// Buffers of the steps a trainer released, kept for the next steps' receptions (their pages
// stay mapped: faulting in a fresh buffer every step is slow).
class ExchangeBufferPool {
 public:
  std::vector<uint32_t> Take() {
    std::lock_guard lock(mu_);
    if (free_.empty()) return {};
    std::vector<uint32_t> buffer = std::move(free_.back());
    free_.pop_back();
    return buffer;
  }
  void Give(std::vector<uint32_t> buffer) {
    std::lock_guard lock(mu_);
    if (free_.size() < kKept) free_.push_back(std::move(buffer));
  }

 private:
  static constexpr size_t kKept = 4;  // steps held at once: those ahead and the one in use
  std::mutex mu_;
  std::vector<std::vector<uint32_t>> free_;
};

Result<const ReceivedBytes::Sample*> ReceivedBytes::Find(uint64_t global,
                                                         std::optional<uint32_t> media) const {
  std::lock_guard lock(mu_);
  const Sample* newest = nullptr;
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
    auto found = it->second->by_global.find(global);
    if (found == it->second->by_global.end()) continue;
    const Sample& sample = found->second;
    if (!sample.status.ok()) return sample.status;
    if (newest == nullptr) newest = &sample;
    // A sample drawn again may have come with other media (another pack, another encoder).
    if (!media || (*media < sample.media.size() && sample.media[*media])) return &sample;
  }
  if (newest != nullptr) return newest;  // the step stays held while the loader uses it
  return Status::Internal(
      "exchange: sample {} of the dataset was not received: it is not in this rank's packs",
      global);
}

Result<std::string_view> ReceivedBytes::Line(uint64_t global) const {
  MMPT_ASSIGN_OR_RETURN(const Sample* sample, Find(global));
  return sample->line;
}

Result<std::span<const int32_t>> ReceivedBytes::Tokens(uint64_t global) const {
  MMPT_ASSIGN_OR_RETURN(const Sample* sample, Find(global));
  return sample->tokens;
}

Result<std::optional<std::span<const std::byte>>> ReceivedBytes::Media(uint64_t global,
                                                                       uint32_t k) const {
  MMPT_ASSIGN_OR_RETURN(const Sample* sample, Find(global, k));
  if (k >= sample->media.size()) {
    return Status::OutOfRange("exchange: sample {} has {} media items, asked for {}", global,
                              sample->media.size(), k);
  }
  return sample->media[k];
}

void ReceivedBytes::Fail(Status status) {
  {
    std::lock_guard lock(mu_);
    failed_ = std::move(status);
  }
  arrived_.notify_all();
}

void ReceivedBytes::Release(uint64_t step) {
  std::lock_guard lock(mu_);
  steps_.erase(steps_.begin(), steps_.lower_bound(step));
}

void ReceivedBytes::Reset() {
  std::lock_guard lock(mu_);
  steps_.clear();
  failed_ = Status::OK();
}

void ReceivedBytes::Put(uint64_t step, std::shared_ptr<const Step> received) {
  {
    std::lock_guard lock(mu_);
    steps_[step] = std::move(received);
  }
  arrived_.notify_all();
}

Status ReceivedBytes::Wait(uint64_t step) const {
  std::unique_lock lock(mu_);
  const auto timeout = std::chrono::duration<double>(timeout_seconds_);
  const bool arrived =
      arrived_.wait_for(lock, timeout, [&] { return !failed_.ok() || steps_.count(step) > 0; });
  if (!failed_.ok()) return failed_;
  if (!arrived) {
    return Status::Timeout(
        "exchange: the samples of step {} have not arrived after {} s (held: {} steps, last "
        "{}); the exchange thread is waiting for a peer",
        step, timeout_seconds_, steps_.size(),
        steps_.empty() ? -1 : static_cast<int64_t>(steps_.rbegin()->first));
  }
  return Status::OK();
}

Result<std::unique_ptr<Exchanger>> Exchanger::Create(std::shared_ptr<const DatasetSource> local,
                                                     PlanFunction plans, Placement placement,
                                                     ExchangerOptions options) {
  if (local == nullptr || !plans) {
    return Status::InvalidArgument("exchange: a local dataset and a plan function are required");
  }
  if (options.peer >= placement.peers()) {
    return Status::InvalidArgument("exchange: peer {} outside the placement's {} peers",
                                   options.peer, placement.peers());
  }
  if (options.threads == 0) {
    return Status::InvalidArgument("exchange: threads must be at least 1");
  }
  if (local->dataset().num_shards() != placement.num_shards()) {
    return Status::InvalidArgument("exchange: the placement is not of this dataset ({})",
                                   local->dataset().dir());
  }
  auto received = std::make_shared<ReceivedBytes>(options.timeout_seconds);
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<DatasetSource> reader,
                        DatasetSource::Create(local->shared_dataset(), local->options(), received));
  auto source = std::make_shared<ExchangeSource>(std::move(reader), std::move(received));
  return std::unique_ptr<Exchanger>(new Exchanger(std::move(local), std::move(plans),
                                                  std::move(placement), std::move(options),
                                                  std::move(source)));
}

Exchanger::Exchanger(std::shared_ptr<const DatasetSource> local, PlanFunction plans,
                     Placement placement, ExchangerOptions options,
                     std::shared_ptr<ExchangeSource> source)
    : local_(std::move(local)),
      plans_(std::move(plans)),
      placement_(std::move(placement)),
      options_(std::move(options)),
      source_(std::move(source)),
      pool_(options_.threads),
      buffers_(std::make_shared<ExchangeBufferPool>()) {
  const uint32_t peers = placement_.peers();
  stats_.bytes_sent.assign(peers, 0);
  stats_.bytes_received.assign(peers, 0);
  stats_.samples_sent.assign(peers, 0);
  stats_.samples_received.assign(peers, 0);
}

uint32_t Exchanger::CpRankOf(uint32_t destination, uint32_t cp) const {
  const auto& trainers = options_.trainer_peer;
  const auto at = std::find(trainers.begin(), trainers.end(), destination);
  return static_cast<uint32_t>(at - trainers.begin()) % cp;
}

Result<ExchangeLists> Exchanger::Lists(uint64_t step) {
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<const plan::StepPlan> plan, plans_(step));
  return PlanExchangeLists(*plan, placement_, ShardsOf(local_->dataset()), options_.trainer_peer,
                           options_.peer);
}

Result<Exchanger::Outgoing> Exchanger::Pack(uint64_t step) {
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<const plan::StepPlan> plan, plans_(step));
  MMPT_ASSIGN_OR_RETURN(ExchangeLists lists,
                        PlanExchangeLists(*plan, placement_, ShardsOf(local_->dataset()),
                                          options_.trainer_peer, options_.peer));
  // Each sample sent is checked and read once, whichever CP ranks it goes to.
  std::vector<uint32_t> pack_of(plan->sequences.size());
  for (size_t p = 0; p < plan->packs.size(); ++p) {
    for (uint32_t k = plan->packs[p].sequence_begin; k < plan->packs[p].sequence_end; ++k) {
      pack_of[k] = static_cast<uint32_t>(p);
    }
  }
  std::vector<uint32_t> samples;
  for (const std::vector<uint32_t>& to : lists.send) {
    samples.insert(samples.end(), to.begin(), to.end());
  }
  std::sort(samples.begin(), samples.end());
  samples.erase(std::unique(samples.begin(), samples.end()), samples.end());
  std::vector<Result<StoredSample>> stored(samples.size(), Status::Internal("not read"));
  pool_.ParallelFor(0, samples.size(),
                    [&](size_t i) { stored[i] = ReadStored(*local_, *plan, samples[i]); });

  std::vector<std::pair<uint32_t, uint32_t>> items;  // (destination, sample)
  for (uint32_t q = 0; q < lists.send.size(); ++q) {
    for (uint32_t k : lists.send[q]) items.emplace_back(q, k);
  }
  if (records_.size() < items.size()) records_.resize(items.size());
  std::vector<uint32_t> cp_rank_of(lists.send.size(), 0);  // each destination's, looked up once
  for (uint32_t q = 0; q < cp_rank_of.size(); ++q) cp_rank_of[q] = CpRankOf(q, plan->layout.cp);
  pool_.ParallelFor(0, items.size(), [&](size_t i) {
    const auto [q, k] = items[i];
    const Result<StoredSample>& s =
        stored[std::lower_bound(samples.begin(), samples.end(), k) - samples.begin()];
    std::vector<uint8_t> decoded;
    if (s.ok()) {
      decoded = DecodedMedia(*plan, pack_of[k], k, cp_rank_of[q], s->held.media());
    }
    const plan::PlannedSequence& seq = plan->sequences[k];
    EncodeRecord({k, seq.source, seq.index}, s, decoded, records_[i]);
  });
  Outgoing out;
  send_.clear();
  size_t i = 0;
  std::lock_guard lock(mu_);
  for (uint32_t q = 0; q < lists.send.size(); ++q) {
    const size_t begin = send_.size();
    for (size_t n = 0; n < lists.send[q].size(); ++n, ++i) {
      send_.insert(send_.end(), records_[i].begin(), records_[i].end());
    }
    out.bytes.push_back((send_.size() - begin) * sizeof(uint32_t));
    stats_.bytes_sent[q] += out.bytes.back();
    stats_.samples_sent[q] += lists.send[q].size();
  }
  out.buffer = std::as_bytes(std::span<const uint32_t>(send_));
  return out;
}

std::span<std::byte> Exchanger::Receive(uint64_t step, std::span<const uint64_t> bytes) {
  uint64_t total = 0;
  for (uint64_t b : bytes) total += b;
  const size_t words = (total + 3) / 4;
  if (pending_.capacity() == 0) pending_ = buffers_->Take();
  // Room for steps a little larger than this one, so a reused buffer rarely grows.
  if (pending_.capacity() < words) pending_.reserve(words + words / 4);
  pending_.resize(words);
  pending_step_ = step;
  pending_bytes_.assign(bytes.begin(), bytes.end());
  return std::as_writable_bytes(std::span<uint32_t>(pending_)).first(total);
}

Status Exchanger::Unpack(uint64_t step) {
  if (pending_step_ != step) {
    return Status::InvalidArgument("exchange step {}: unpacked before its buffer was received",
                                   step);
  }
  pending_step_ = UINT64_MAX;
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<const plan::StepPlan> plan, plans_(step));
  MMPT_ASSIGN_OR_RETURN(ExchangeLists lists,
                        PlanExchangeLists(*plan, placement_, ShardsOf(local_->dataset()),
                                          options_.trainer_peer, options_.peer));
  const std::vector<uint64_t> bytes = std::move(pending_bytes_);
  if (bytes.size() != lists.receive.size()) {
    return Status::Corrupt("exchange step {}: sizes from {} peers, the placement has {}", step,
                           bytes.size(), lists.receive.size());
  }
  // The step owns the buffer; when the trainer releases the step it returns to the pool.
  std::shared_ptr<ReceivedBytes::Step> held(new ReceivedBytes::Step(),
                                            [pool = buffers_](ReceivedBytes::Step* s) {
                                              pool->Give(std::move(s->buffer));
                                              delete s;
                                            });
  held->buffer = std::move(pending_);
  pending_ = {};
  const store::Dataset& dataset = local_->dataset();
  size_t at = 0;
  for (uint32_t q = 0; q < bytes.size(); ++q) {
    const std::string where = fmt::format("exchange step {}, from peer {}", step, q);
    if (bytes[q] % 4 != 0) {
      return Status::Corrupt("{}: {} bytes, not whole records", where, bytes[q]);
    }
    std::vector<RecordKey> keys;
    for (uint32_t k : lists.receive[q]) {
      keys.push_back({k, plan->sequences[k].source, plan->sequences[k].index});
    }
    std::vector<ReceivedSample> received;
    MMPT_RETURN_IF_ERROR(
        DecodeRecords(std::span<const uint32_t>(held->buffer).subspan(at / 4, bytes[q] / 4), keys,
                      where, received));
    for (size_t i = 0; i < keys.size(); ++i) {
      ReceivedSample& sample = received[i];
      MMPT_ASSIGN_OR_RETURN(uint64_t global, dataset.GlobalIndex(keys[i].source, keys[i].index));
      if (sample.status.ok()) {
        MMPT_ASSIGN_OR_RETURN(const store::StoredSample stored, dataset.Sample(global));
        if (sample.media.size() != stored.media().size()) {
          return Status::Corrupt(
              "{}: sample {} of source {} came with {} media items, .meta has {}", where,
              keys[i].index, keys[i].source, sample.media.size(), stored.media().size());
        }
      }
      // A sample twice in this rank's packs comes twice, perhaps with other media each time.
      auto [at_global, first] = held->by_global.try_emplace(global, std::move(sample));
      if (!first && at_global->second.status.ok()) {
        for (size_t m = 0; m < at_global->second.media.size(); ++m) {
          if (!at_global->second.media[m]) at_global->second.media[m] = sample.media[m];
        }
      }
    }
    at += bytes[q];
    std::lock_guard lock(mu_);
    stats_.bytes_received[q] += bytes[q];
    stats_.samples_received[q] += lists.receive[q].size();
  }
  {
    std::lock_guard lock(mu_);
    ++stats_.steps;
  }
  source_->received().Put(step, std::move(held));
  return Status::OK();
}

ExchangeStats Exchanger::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace mmpt::dist
