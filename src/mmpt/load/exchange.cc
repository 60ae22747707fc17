#include "mmpt/load/exchange.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mmpt/core/mapped_file.h"

namespace mmpt::load {

Result<Placement> Placement::RoundRobin(const store::Manifest& manifest, uint32_t peers) {
  if (peers == 0) return Status::InvalidArgument("placement: peers must be at least 1");
  Placement placement;
  placement.peers_ = peers;
  for (size_t shard = 0; shard < manifest.shards.size(); ++shard) {
    placement.holder_.push_back(static_cast<uint32_t>(shard % peers));
  }
  return placement;
}

Result<Placement> Placement::Read(const std::string& path, const store::Manifest& manifest) {
  MMPT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("peers") || !doc["peers"].is_number_unsigned() ||
      !doc.contains("shards") || !doc["shards"].is_object()) {
    return Status::Corrupt(
        "{}: not a placement file (expected {{\"peers\": P, \"shards\": {{path: peer}}}})", path);
  }
  Placement placement;
  placement.peers_ = doc["peers"].get<uint32_t>();
  if (placement.peers_ == 0) return Status::InvalidArgument("{}: peers must be at least 1", path);
  const nlohmann::json& shards = doc["shards"];
  for (const store::ShardInfo& shard : manifest.shards) {
    auto it = shards.find(shard.stem);
    if (it == shards.end()) {
      return Status::InvalidArgument("{}: shard '{}' of the manifest has no holder", path,
                                     shard.stem);
    }
    if (!it->is_number_unsigned() || it->get<uint64_t>() >= placement.peers_) {
      return Status::InvalidArgument("{}: shard '{}' is held by peer {}, outside 0..{}", path,
                                     shard.stem, it->dump(), placement.peers_ - 1);
    }
    placement.holder_.push_back(it->get<uint32_t>());
  }
  if (shards.size() != manifest.shards.size()) {
    for (const auto& item : shards.items()) {
      const std::string& stem = item.key();
      auto known = std::find_if(manifest.shards.begin(), manifest.shards.end(),
                                [&](const store::ShardInfo& s) { return s.stem == stem; });
      if (known == manifest.shards.end()) {
        return Status::InvalidArgument("{}: shard '{}' is not in the manifest", path, stem);
      }
    }
  }
  return placement;
}

Status Placement::Write(const std::string& path, const store::Manifest& manifest) const {
  nlohmann::ordered_json doc;
  doc["peers"] = peers_;
  doc["shards"] = nlohmann::ordered_json::object();
  for (size_t shard = 0; shard < manifest.shards.size(); ++shard) {
    doc["shards"][manifest.shards[shard].stem] = holder_[shard];
  }
  return WriteFileAtomic(path, doc.dump(2) + "\n");
}

std::vector<size_t> Placement::ShardsOf(uint32_t peer) const {
  std::vector<size_t> shards;
  for (size_t shard = 0; shard < holder_.size(); ++shard) {
    if (holder_[shard] == peer) shards.push_back(shard);
  }
  return shards;
}

Result<ExchangeLists> PlanExchangeLists(const plan::StepPlan& plan, const Placement& placement,
                                        const store::Dataset& dataset,
                                        std::span<const uint32_t> trainer_peer, uint32_t peer) {
  const uint32_t peers = placement.peers();
  if (plan.layout.cp > 1) {
    return Status::InvalidArgument(
        "exchange: CP {} is not supported (the exchange serves DP ranks at CP 1)", plan.layout.cp);
  }
  if (dataset.num_shards() != placement.num_shards()) {
    return Status::InvalidArgument("exchange: the placement is not of this dataset ({})",
                                   dataset.dir());
  }
  if (trainer_peer.size() != plan.layout.dp) {
    return Status::InvalidArgument("exchange: {} trainer peers given for dp {}",
                                   trainer_peer.size(), plan.layout.dp);
  }
  if (peer >= peers) {
    return Status::InvalidArgument("exchange: peer {} outside the placement's {} peers", peer,
                                   peers);
  }
  std::vector<uint8_t> trains(peers, 0);
  for (uint32_t d = 0; d < trainer_peer.size(); ++d) {
    if (trainer_peer[d] >= peers || trains[trainer_peer[d]]++ > 0) {
      return Status::InvalidArgument(
          "exchange: DP rank {} is trained by peer {}, which is outside 0..{} or trains "
          "another DP rank",
          d, trainer_peer[d], peers - 1);
    }
  }
  ExchangeLists lists;
  lists.send.resize(peers);
  lists.receive.resize(peers);
  for (uint32_t d = 0; d < plan.layout.dp; ++d) {
    const uint32_t trainer = trainer_peer[d];
    for (const plan::PlannedPack& pack : plan.RankPacks(d)) {
      for (uint32_t k = pack.sequence_begin; k < pack.sequence_end; ++k) {
        const plan::PlannedSequence& seq = plan.sequences[k];
        MMPT_ASSIGN_OR_RETURN(uint64_t global, dataset.GlobalIndex(seq.source, seq.index));
        const uint32_t holder = placement.holder(dataset.Locate(global).first);
        if (holder == peer) lists.send[trainer].push_back(k);
        if (trainer == peer) lists.receive[holder].push_back(k);
      }
    }
  }
  return lists;
}

namespace {

constexpr size_t kHeaderWords = 7;  // magic, sequence, source, index ×2, code, message bytes
constexpr size_t kImageWords = 10;  // RenderedVisual ×8, code, message bytes

size_t WordsOf(size_t bytes) { return (bytes + 3) / 4; }

// Appends a record's words.
class RecordWriter {
 public:
  explicit RecordWriter(std::vector<uint32_t>& out) : out_(out) {}
  void Word(uint32_t w) { out_.push_back(w); }
  void Bytes(const void* data, size_t size) {
    const size_t at = out_.size();
    out_.resize(at + WordsOf(size), 0);
    if (size > 0) std::memcpy(out_.data() + at, data, size);
  }
  void StatusOf(const Status& status) {
    Word(static_cast<uint32_t>(status.code()));
    Word(static_cast<uint32_t>(status.message().size()));
    Bytes(status.message().data(), status.message().size());
  }

 private:
  std::vector<uint32_t>& out_;
};

// Reads a record's words; every read is bounds-checked (the bytes came from another process).
class RecordReader {
 public:
  RecordReader(std::span<const uint32_t> words, std::string where)
      : words_(words), where_(std::move(where)) {}
  bool done() const { return at_ == words_.size(); }
  Result<std::span<const uint32_t>> Words(size_t n) {
    if (n > words_.size() - at_) {
      return Status::Corrupt("{}: record cut short ({} words wanted, {} left)", where_, n,
                             words_.size() - at_);
    }
    std::span<const uint32_t> out = words_.subspan(at_, n);
    at_ += n;
    return out;
  }
  Result<uint32_t> Word() {
    MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> w, Words(1));
    return w[0];
  }
  // Read a carried status into `out`; the result is the reading's own error.
  Status StatusOf(Status* out) {
    MMPT_ASSIGN_OR_RETURN(uint32_t code, Word());
    MMPT_ASSIGN_OR_RETURN(uint32_t size, Word());
    MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> text, Words(WordsOf(size)));
    if (code > static_cast<uint32_t>(StatusCode::kTimeout)) {
      return Status::Corrupt("{}: unknown status code {}", where_, code);
    }
    *out = code == 0 ? Status::OK()
                     : Status(static_cast<StatusCode>(code),
                              std::string(reinterpret_cast<const char*>(text.data()), size));
    return Status::OK();
  }
  const std::string& where() const { return where_; }

 private:
  std::span<const uint32_t> words_;
  size_t at_ = 0;
  std::string where_;
};

// The record of planned sample `k` of `plan`, rendered by `source`, into `out` (emptied
// first; its capacity is kept).
void EncodeSample(const SampleSource& source, const plan::StepPlan& plan, uint32_t k,
                  std::vector<uint32_t>& out) {
  const plan::PlannedSequence& seq = plan.sequences[k];
  out.clear();
  RecordWriter w(out);
  w.Word(kExchangeRecordMagic);
  w.Word(k);
  w.Word(seq.source);
  w.Word(static_cast<uint32_t>(seq.index));
  w.Word(static_cast<uint32_t>(seq.index >> 32));
  Result<RenderedSample> rendered = source.Render(plan, seq);
  if (rendered.ok() && !rendered->audios.empty()) {
    rendered = Status::InvalidArgument(
        "sample {} of source {} has audio clips, which the exchange does not carry yet (load "
        "it from shared storage)",
        seq.index, seq.source);
  }
  if (!rendered.ok()) {
    w.StatusOf(rendered.status());
    return;
  }
  w.StatusOf(Status::OK());
  const RenderedSample& sample = *rendered;
  w.Word(static_cast<uint32_t>(sample.tokens.size()));
  w.Bytes(sample.tokens.data(), sample.tokens.size() * sizeof(int32_t));
  w.Bytes(sample.has_loss.data(), sample.has_loss.size());
  w.Word(static_cast<uint32_t>(sample.visuals.size()));
  for (const RenderedVisual& image : sample.visuals) {
    for (uint32_t v : {image.token_start, image.token_count, image.grid_t, image.grid_h,
                       image.grid_w, image.sample_image, uint32_t{image.video},
                       std::bit_cast<uint32_t>(image.second_per_grid_t)}) {
      w.Word(v);
    }
    const size_t status_at = out.size();
    w.StatusOf(Status::OK());
    const size_t floats = size_t{image.grid_t} * image.grid_h * image.grid_w * source.patch_dim();
    out.resize(out.size() + floats);
    static_assert(sizeof(float) == sizeof(uint32_t));
    std::span<float> pixels(reinterpret_cast<float*>(out.data() + out.size() - floats), floats);
    if (Status status = source.FillPixels(sample, image, pixels); !status.ok()) {
      out.resize(status_at);
      w.StatusOf(status);
    }
  }
}

// Parse one record of `reader` into `out`, checking it is planned sample `k` of `plan`.
Status DecodeSample(RecordReader& reader, const plan::StepPlan& plan, uint32_t k,
                    uint32_t patch_dim, ExchangeSource::Sample& out) {
  MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> head, reader.Words(5));
  const plan::PlannedSequence& seq = plan.sequences[k];
  const uint64_t index = head[3] | (uint64_t{head[4]} << 32);
  if (head[0] != kExchangeRecordMagic || head[1] != k || head[2] != seq.source ||
      index != seq.index) {
    return Status::Corrupt(
        "{}: expected the record of planned sample {} (source {}, index {}), got magic {:08x} "
        "sample {} (source {}, index {})",
        reader.where(), k, seq.source, seq.index, head[0], head[1], head[2], index);
  }
  MMPT_RETURN_IF_ERROR(reader.StatusOf(&out.status));
  out.rendered.source = seq.source;
  out.rendered.index = seq.index;
  if (!out.status.ok()) return Status::OK();
  MMPT_ASSIGN_OR_RETURN(uint32_t n, reader.Word());
  MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> ids, reader.Words(n));
  MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> loss, reader.Words(WordsOf(n)));
  out.rendered.tokens.resize(n);
  out.rendered.has_loss.resize(n);
  std::memcpy(out.rendered.tokens.data(), ids.data(), n * sizeof(int32_t));
  std::memcpy(out.rendered.has_loss.data(), loss.data(), n);
  MMPT_ASSIGN_OR_RETURN(uint32_t images, reader.Word());
  for (uint32_t i = 0; i < images; ++i) {
    MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> f, reader.Words(8));
    if (f[6] > 1) return Status::Corrupt("{}: image {} has kind {}", reader.where(), i, f[6]);
    ExchangeSource::Image image;
    image.image = {f[0], f[1], f[2], f[3], f[4], f[5], f[6] == 1, std::bit_cast<float>(f[7])};
    MMPT_RETURN_IF_ERROR(reader.StatusOf(&image.status));
    if (image.status.ok()) {
      const size_t floats = size_t{f[2]} * f[3] * f[4] * patch_dim;
      MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> pixels, reader.Words(floats));
      image.pixels = {reinterpret_cast<const float*>(pixels.data()), floats};
    }
    out.rendered.visuals.push_back(image.image);
    out.images.push_back(image);
  }
  return Status::OK();
}

}  // namespace

// Buffers of the steps a trainer released, kept for the next steps' receptions (their pages
// stay mapped: faulting in a fresh buffer of hundreds of MB every step is slow).
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

uint64_t ExchangeRecordBytes(uint32_t tokens, std::span<const uint64_t> image_floats) {
  uint64_t words = kHeaderWords + 1 + tokens + WordsOf(tokens) + 1;
  for (uint64_t floats : image_floats) words += kImageWords + floats;
  return words * 4;
}

Result<RenderedSample> ExchangeSource::Render(const plan::StepPlan& plan,
                                              const plan::PlannedSequence& sequence) const {
  const size_t k = &sequence - plan.sequences.data();
  if (k >= plan.sequences.size()) {
    return Status::Internal("exchange: the sequence is not one of step {}'s plan", plan.step);
  }
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<const Step> step, Wait(plan.step));
  auto it = step->by_sequence.find(static_cast<uint32_t>(k));
  if (it == step->by_sequence.end()) {
    return Status::Internal(
        "exchange: sample {} of source {} (planned sample {} of step {}) was not received: "
        "it is not in this rank's packs",
        sequence.index, sequence.source, k, plan.step);
  }
  if (!it->second.status.ok()) return it->second.status;
  return it->second.rendered;
}

Status ExchangeSource::FillPixels(const RenderedSample& sample, const RenderedVisual& image,
                                  std::span<float> out) const {
  std::vector<std::shared_ptr<const Step>> steps;
  {
    std::lock_guard lock(mu_);
    for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) steps.push_back(it->second);
  }
  // Pixels depend on the image alone, so any held step's copy of the sample serves.
  for (const std::shared_ptr<const Step>& step : steps) {
    auto it = step->by_sample.find({sample.source, sample.index});
    if (it != step->by_sample.end()) {
      for (const Image& held : it->second->images) {
        if (held.image.sample_image != image.sample_image) continue;
        if (!held.status.ok()) return held.status;
        if (held.pixels.size() != out.size()) {
          return Status::Internal(
              "exchange: image {} of sample {} of source {}: {} floats "
              "received, {} wanted",
              image.sample_image, sample.index, sample.source, held.pixels.size(), out.size());
        }
        std::copy(held.pixels.begin(), held.pixels.end(), out.begin());
        return Status::OK();
      }
    }
  }
  return Status::Internal("exchange: image {} of sample {} of source {} was not received",
                          image.sample_image, sample.index, sample.source);
}

void ExchangeSource::Fail(Status status) {
  {
    std::lock_guard lock(mu_);
    failed_ = std::move(status);
  }
  arrived_.notify_all();
}

void ExchangeSource::Release(uint64_t step) {
  std::lock_guard lock(mu_);
  steps_.erase(steps_.begin(), steps_.lower_bound(step));
}

void ExchangeSource::Reset() {
  std::lock_guard lock(mu_);
  steps_.clear();
  failed_ = Status::OK();
}

void ExchangeSource::Put(uint64_t step, std::shared_ptr<const Step> received) {
  {
    std::lock_guard lock(mu_);
    steps_[step] = std::move(received);
  }
  arrived_.notify_all();
}

Result<std::shared_ptr<const ExchangeSource::Step>> ExchangeSource::Wait(uint64_t step) const {
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
  return steps_.at(step);
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
  return std::unique_ptr<Exchanger>(
      new Exchanger(std::move(local), std::move(plans), std::move(placement), std::move(options)));
}

Exchanger::Exchanger(std::shared_ptr<const DatasetSource> local, PlanFunction plans,
                     Placement placement, ExchangerOptions options)
    : local_(std::move(local)),
      plans_(std::move(plans)),
      placement_(std::move(placement)),
      options_(std::move(options)),
      source_(std::make_shared<ExchangeSource>(local_->patch_dim(), local_->merge_size(),
                                               local_->tokens_per_second(),
                                               options_.timeout_seconds)),
      pool_(options_.threads),
      buffers_(std::make_shared<ExchangeBufferPool>()) {
  const uint32_t peers = placement_.peers();
  stats_.bytes_sent.assign(peers, 0);
  stats_.bytes_received.assign(peers, 0);
  stats_.samples_sent.assign(peers, 0);
  stats_.samples_received.assign(peers, 0);
}

Result<ExchangeLists> Exchanger::Lists(uint64_t step) {
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<const plan::StepPlan> plan, plans_(step));
  return PlanExchangeLists(*plan, placement_, local_->dataset(), options_.trainer_peer,
                           options_.peer);
}

Result<Exchanger::Outgoing> Exchanger::Pack(uint64_t step) {
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<const plan::StepPlan> plan, plans_(step));
  MMPT_ASSIGN_OR_RETURN(ExchangeLists lists,
                        PlanExchangeLists(*plan, placement_, local_->dataset(),
                                          options_.trainer_peer, options_.peer));
  std::vector<uint32_t> items;
  for (const std::vector<uint32_t>& to : lists.send) {
    items.insert(items.end(), to.begin(), to.end());
  }
  if (records_.size() < items.size()) records_.resize(items.size());
  pool_.ParallelFor(0, items.size(),
                    [&](size_t i) { EncodeSample(*local_, *plan, items[i], records_[i]); });
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
  // Room for steps a little larger than this one, so a reused buffer rarely grows (growing
  // moves it into fresh pages).
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
                        PlanExchangeLists(*plan, placement_, local_->dataset(),
                                          options_.trainer_peer, options_.peer));
  const std::vector<uint64_t> bytes = std::move(pending_bytes_);
  if (bytes.size() != lists.receive.size()) {
    return Status::Corrupt("exchange step {}: sizes from {} peers, the placement has {}", step,
                           bytes.size(), lists.receive.size());
  }
  // The step owns the buffer; when the trainer releases the step it returns to the pool.
  std::shared_ptr<ExchangeSource::Step> held(new ExchangeSource::Step(),
                                             [pool = buffers_](ExchangeSource::Step* s) {
                                               pool->Give(std::move(s->buffer));
                                               delete s;
                                             });
  held->buffer = std::move(pending_);
  pending_ = {};
  size_t at = 0;
  for (uint32_t q = 0; q < bytes.size(); ++q) {
    const std::string where = fmt::format("exchange step {}, from peer {}", step, q);
    if (bytes[q] % 4 != 0) {
      return Status::Corrupt("{}: {} bytes, not whole records", where, bytes[q]);
    }
    RecordReader reader(std::span<const uint32_t>(held->buffer).subspan(at / 4, bytes[q] / 4),
                        where);
    for (uint32_t k : lists.receive[q]) {
      ExchangeSource::Sample& sample = held->by_sequence[k];
      MMPT_RETURN_IF_ERROR(DecodeSample(reader, *plan, k, local_->patch_dim(), sample));
      if (sample.status.ok()) {
        held->by_sample[{sample.rendered.source, sample.rendered.index}] = &sample;
      }
    }
    if (!reader.done()) {
      return Status::Corrupt("{}: bytes left after the {} planned samples", where,
                             lists.receive[q].size());
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
  source_->Put(step, std::move(held));
  return Status::OK();
}

ExchangeStats Exchanger::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace mmpt::load
