#include "mmpt/store/prefetcher.h"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace mmpt::store {

// Shared by the Prefetcher, its workers and every sample it handed out, so a sample released
// after the Prefetcher is gone still has somewhere to return its bytes.
struct PrefetchState {
  std::mutex mu;
  std::condition_variable room;   // workers wait for budget
  std::condition_variable ready;  // the consumer waits for the next position
  uint64_t bytes_in_flight = 0;
  size_t samples_in_flight = 0;
  size_t next_to_fetch = 0;
  size_t next_to_deliver = 0;
  bool cancelled = false;
  std::unordered_map<size_t, Result<PrefetchedSample>> done;  // by position in the list

  void Release(uint64_t bytes) {
    {
      std::lock_guard lock(mu);
      bytes_in_flight -= bytes;
      --samples_in_flight;
    }
    room.notify_all();
  }
};

PrefetchedSample::~PrefetchedSample() { Release(); }

PrefetchedSample::PrefetchedSample(PrefetchedSample&& other) noexcept { *this = std::move(other); }

PrefetchedSample& PrefetchedSample::operator=(PrefetchedSample&& other) noexcept {
  if (this != &other) {
    Release();
    index = other.index;
    held = std::move(other.held);
    sample = std::move(other.sample);
    tokens = other.tokens;
    media = std::move(other.media);
    size_bytes = other.size_bytes;
    state_ = std::move(other.state_);
  }
  return *this;
}

void PrefetchedSample::Release() {
  if (state_) state_->Release(size_bytes);
  state_.reset();
}

namespace {

// What a sample will count against the bound, known from metadata before it is read (0 for
// one whose metadata cannot be read: Fetch reports why).
uint64_t PlannedBytes(const Dataset& dataset, uint64_t index) {
  const Result<StoredSample> stored = dataset.Sample(index);
  if (!stored.ok()) return 0;
  uint64_t bytes = 4 * uint64_t{stored->meta().text_tokens} + 256;
  for (const MediaMeta& m : stored->media()) {
    if (m.first_of_medium()) bytes += m.data_size;  // a grouped video's bytes once
  }
  return bytes;
}

Result<PrefetchedSample> Fetch(const Dataset& dataset, uint64_t index, bool touch) {
  PrefetchedSample out;
  out.index = index;
  MMPT_ASSIGN_OR_RETURN(out.held, dataset.Sample(index));
  MMPT_RETURN_IF_ERROR(out.held.Read(out.sample));
  MMPT_ASSIGN_OR_RETURN(out.tokens, out.held.Tokens());
  const std::span<const MediaMeta> records = out.held.media();
  for (size_t k = 0; k < records.size(); ++k) {
    if (!records[k].first_of_medium()) continue;  // a grouped video's later groups share its bytes
    MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> bytes, out.held.Media(k));
    if (touch) {
      // Fault every page in now, on this thread, rather than in the consumer.
      volatile std::byte sink{};
      for (size_t at = 0; at < bytes.size(); at += 4096) sink = bytes[at];
      (void)sink;
    }
    out.media.push_back(bytes);
  }
  return out;
}

}  // namespace

Prefetcher::Prefetcher(const Dataset& dataset, std::vector<uint64_t> indices,
                       PrefetchOptions options)
    : dataset_(dataset),
      indices_(std::move(indices)),
      options_(options),
      state_(std::make_shared<PrefetchState>()) {
  if (options_.threads == 0) options_.threads = 1;
  if (options_.max_samples_in_flight == 0) options_.max_samples_in_flight = 1;
  for (size_t t = 0; t < options_.threads; ++t) workers_.emplace_back([this] { Worker(); });
}

Prefetcher::~Prefetcher() {
  Cancel();
  for (std::thread& worker : workers_) worker.join();
  // Undelivered samples hold the state; drop them outside the lock their release takes.
  std::unordered_map<size_t, Result<PrefetchedSample>> undelivered;
  {
    std::lock_guard lock(state_->mu);
    undelivered.swap(state_->done);
  }
}

void Prefetcher::Cancel() {
  {
    std::lock_guard lock(state_->mu);
    state_->cancelled = true;
  }
  state_->room.notify_all();
  state_->ready.notify_all();
}

uint64_t Prefetcher::bytes_in_flight() const {
  std::lock_guard lock(state_->mu);
  return state_->bytes_in_flight;
}

void Prefetcher::Worker() {
  PrefetchState& s = *state_;
  while (true) {
    size_t position;
    uint64_t planned = 0;  // of the next position, computed by the wait below
    {
      std::unique_lock lock(s.mu);
      // Positions are taken in list order under the lock, so the position the consumer waits
      // for has always been taken before any later one: the budget cannot deadlock.
      s.room.wait(lock, [&] {
        if (s.cancelled || s.next_to_fetch >= indices_.size()) return true;
        planned = PlannedBytes(dataset_, indices_[s.next_to_fetch]);
        return s.samples_in_flight == 0 ||
               (s.samples_in_flight < options_.max_samples_in_flight &&
                s.bytes_in_flight + planned <= options_.max_bytes_in_flight);
      });
      if (s.cancelled || s.next_to_fetch >= indices_.size()) return;
      position = s.next_to_fetch++;
      s.bytes_in_flight += planned;
      ++s.samples_in_flight;
    }
    Result<PrefetchedSample> result = Fetch(dataset_, indices_[position], options_.touch_media);
    if (result.ok()) {
      result->size_bytes = planned;
      result->state_ = state_;
    }
    {
      std::lock_guard lock(s.mu);
      if (!result.ok()) {  // an error holds no bytes: release its reservation at once
        s.bytes_in_flight -= planned;
        --s.samples_in_flight;
      }
      s.done.emplace(position, std::move(result));
    }
    s.ready.notify_all();
    s.room.notify_all();
  }
}

std::optional<Result<PrefetchedSample>> Prefetcher::Next() {
  PrefetchState& s = *state_;
  std::unique_lock lock(s.mu);
  if (s.cancelled) return Result<PrefetchedSample>(Status::Cancelled("prefetch cancelled"));
  if (s.next_to_deliver >= indices_.size()) return std::nullopt;
  s.ready.wait(lock, [&] { return s.cancelled || s.done.count(s.next_to_deliver) > 0; });
  if (s.cancelled) return Result<PrefetchedSample>(Status::Cancelled("prefetch cancelled"));
  auto node = s.done.extract(s.next_to_deliver++);
  return std::move(node.mapped());
}

}  // namespace mmpt::store
