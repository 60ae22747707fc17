#include "mmpt/load/exchange.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mmpt/core/mapped_file.h"

namespace mmpt::load {

Result<Placement> Placement::RoundRobin(size_t num_shards, uint32_t peers) {
  if (peers == 0) return Status::InvalidArgument("placement: peers must be at least 1");
  Placement placement;
  placement.peers_ = peers;
  for (size_t shard = 0; shard < num_shards; ++shard) {
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

ShardOf ShardsOf(const store::Dataset& dataset) {
  return [&dataset](uint32_t source, uint64_t index) -> Result<size_t> {
    MMPT_ASSIGN_OR_RETURN(uint64_t global, dataset.GlobalIndex(source, index));
    return dataset.Locate(global).first;
  };
}

Result<ExchangeLists> PlanExchangeLists(const plan::StepPlan& plan, const Placement& placement,
                                        const ShardOf& shard_of,
                                        std::span<const uint32_t> trainer_peer, uint32_t peer) {
  const uint32_t peers = placement.peers();
  const uint32_t cp = plan.layout.cp;
  if (trainer_peer.size() != size_t{plan.layout.dp} * cp) {
    return Status::InvalidArgument(
        "exchange: {} trainer peers given for dp {} × cp {} (one per DP and CP rank)",
        trainer_peer.size(), plan.layout.dp, cp);
  }
  if (peer >= peers) {
    return Status::InvalidArgument("exchange: peer {} outside the placement's {} peers", peer,
                                   peers);
  }
  std::vector<uint8_t> trains(peers, 0);
  for (uint32_t t = 0; t < trainer_peer.size(); ++t) {
    if (trainer_peer[t] >= peers || trains[trainer_peer[t]]++ > 0) {
      return Status::InvalidArgument(
          "exchange: DP rank {} CP rank {} is trained by peer {}, which is outside 0..{} or "
          "trains another rank",
          t / cp, t % cp, trainer_peer[t], peers - 1);
    }
  }
  ExchangeLists lists;
  lists.send.resize(peers);
  lists.receive.resize(peers);
  for (uint32_t d = 0; d < plan.layout.dp; ++d) {
    const std::span<const uint32_t> trainers = trainer_peer.subspan(size_t{d} * cp, cp);
    const bool trains_d = std::find(trainers.begin(), trainers.end(), peer) != trainers.end();
    for (const plan::PlannedPack& pack : plan.RankPacks(d)) {
      for (uint32_t k = pack.sequence_begin; k < pack.sequence_end; ++k) {
        const plan::PlannedSequence& seq = plan.sequences[k];
        MMPT_ASSIGN_OR_RETURN(size_t shard, shard_of(seq.source, seq.index));
        if (shard >= placement.num_shards()) {
          return Status::OutOfRange(
              "exchange: sample {} of source {} is in shard {}, outside "
              "the placement's {}",
              seq.index, seq.source, shard, placement.num_shards());
        }
        const uint32_t holder = placement.holder(shard);
        if (holder == peer) {
          for (uint32_t trainer : trainers) lists.send[trainer].push_back(k);
        }
        if (trains_d) lists.receive[holder].push_back(k);
      }
    }
  }
  return lists;
}

namespace {

// A grouped video's bytes travel once, with its first record, to a trainer that decodes any of
// its groups (or of its sound track's parts).
std::vector<uint8_t> FirstRecordsOnly(std::span<const store::MediaMeta> media,
                                      std::vector<uint8_t> decoded) {
  for (size_t k = media.size(); k-- > 0;) {
    if (!media[k].first_of_medium() && decoded[k]) {
      decoded[store::FirstRecordOfMedium(media, static_cast<uint32_t>(k))] = 1;
      decoded[k] = 0;
    }
  }
  return decoded;
}

}  // namespace

std::vector<uint8_t> DecodedMedia(const plan::StepPlan& plan, size_t pack, uint32_t sequence,
                                  uint32_t cp_rank, std::span<const store::MediaMeta> media) {
  std::vector<uint8_t> decoded(media.size(), plan.layout.cp == 1 ? 1 : 0);
  if (plan.layout.cp == 1) return FirstRecordsOnly(media, std::move(decoded));
  // The plan numbers each kind apart (PlannedImage::sample_image, ...): the media index of
  // the n-th item of each kind.
  std::array<std::vector<uint32_t>, 3> of_kind;
  for (uint32_t k = 0; k < media.size(); ++k) {
    of_kind[static_cast<size_t>(media[k].kind)].push_back(k);
  }
  const plan::PlannedPack& p = plan.packs[pack];
  const plan::PackCp& cp = plan.cp[pack];
  // Item i of an assignment, in the cp stage's order, is decoded here when cp_rank encodes it.
  auto mark = [&](const cp::EncoderAssignment& assignment, uint32_t i, uint32_t k,
                  store::MediaKind kind, uint32_t n) {
    const std::vector<uint32_t>& kind_items = of_kind[static_cast<size_t>(kind)];
    if (k != sequence || n >= kind_items.size() || cp_rank >= assignment.encoded.size()) return;
    const std::vector<uint32_t>& mine = assignment.encoded[cp_rank];
    if (std::binary_search(mine.begin(), mine.end(), i)) decoded[kind_items[n]] = 1;
  };
  uint32_t vision = 0, audio = 0;  // images in pack order, then videos; clips apart
  for (uint32_t k = p.sequence_begin; k < p.sequence_end; ++k) {
    for (const plan::PlannedImage& image : plan.Images(plan.sequences[k])) {
      mark(cp.vision, vision++, k, store::MediaKind::kImage, image.sample_image);
    }
  }
  for (uint32_t k = p.sequence_begin; k < p.sequence_end; ++k) {
    for (const plan::PlannedVideo& video : plan.Videos(plan.sequences[k])) {
      mark(cp.vision, vision++, k, store::MediaKind::kVideo, video.sample_video);
    }
    for (std::span<const plan::PlannedAudio> clip :
         plan::AudioClips(plan.Audios(plan.sequences[k]))) {
      for (const plan::PlannedAudio& part : clip) {
        mark(cp.audio, audio, k, store::MediaKind::kAudio, part.sample_audio);
      }
      ++audio;
    }
  }
  return FirstRecordsOnly(media, std::move(decoded));
}

namespace {

constexpr size_t kHeaderWords = 7;  // magic, sequence, source, index ×2, code, message bytes

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
  // Its size, then its bytes.
  void Sized(const void* data, size_t size) {
    Word(static_cast<uint32_t>(size));
    Bytes(data, size);
  }
  void StatusOf(const Status& status) {
    Word(static_cast<uint32_t>(status.code()));
    Sized(status.message().data(), status.message().size());
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
  // A size, then that many bytes.
  Result<std::span<const std::byte>> Sized() {
    MMPT_ASSIGN_OR_RETURN(uint32_t size, Word());
    MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> words, Words(WordsOf(size)));
    return std::as_bytes(words).first(size);
  }
  // Read a carried status into `out`; the result is the reading's own error.
  Status StatusOf(Status* out) {
    MMPT_ASSIGN_OR_RETURN(uint32_t code, Word());
    MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> text, Sized());
    if (code > static_cast<uint32_t>(StatusCode::kTimeout)) {
      return Status::Corrupt("{}: unknown status code {}", where_, code);
    }
    *out = code == 0 ? Status::OK()
                     : Status(static_cast<StatusCode>(code),
                              std::string(reinterpret_cast<const char*>(text.data()), text.size()));
    return Status::OK();
  }
  const std::string& where() const { return where_; }

 private:
  std::span<const uint32_t> words_;
  size_t at_ = 0;
  std::string where_;
};

// The stored bytes a holder sends for one sample: its line, ids and media, once it rendered.
struct Stored {
  std::string_view line;
  std::span<const int32_t> tokens;
  std::vector<std::span<const std::byte>> media;
};

// Render planned sample `k` of `plan` from the holder's own shards (every check a trainer's
// Render makes) and gather its stored bytes.
Result<Stored> ReadStored(const DatasetSource& local, const plan::StepPlan& plan, uint32_t k) {
  const plan::PlannedSequence& seq = plan.sequences[k];
  MMPT_RETURN_IF_ERROR(local.Render(plan, seq).status());
  const store::Dataset& dataset = local.dataset();
  MMPT_ASSIGN_OR_RETURN(uint64_t global, dataset.GlobalIndex(seq.source, seq.index));
  Stored stored;
  MMPT_ASSIGN_OR_RETURN(stored.line, dataset.Line(global));
  MMPT_ASSIGN_OR_RETURN(stored.tokens, dataset.Tokens(global));
  for (size_t m = 0; m < dataset.media_meta(global).size(); ++m) {
    MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> bytes, dataset.Media(global, m));
    stored.media.push_back(bytes);
  }
  return stored;
}

// The record of planned sample `k` of `plan` for a trainer that decodes the media `decoded`
// marks, into `out` (emptied first; its capacity is kept).
void EncodeSample(const plan::StepPlan& plan, uint32_t k, const Result<Stored>& stored,
                  std::span<const uint8_t> decoded, std::vector<uint32_t>& out) {
  const plan::PlannedSequence& seq = plan.sequences[k];
  out.clear();
  RecordWriter w(out);
  for (uint32_t v : {kExchangeRecordMagic, k, seq.source, static_cast<uint32_t>(seq.index),
                     static_cast<uint32_t>(seq.index >> 32)}) {
    w.Word(v);
  }
  w.StatusOf(stored.status());
  if (!stored.ok()) return;
  w.Sized(stored->line.data(), stored->line.size());
  w.Word(static_cast<uint32_t>(stored->tokens.size()));
  w.Bytes(stored->tokens.data(), stored->tokens.size_bytes());
  w.Word(static_cast<uint32_t>(stored->media.size()));
  for (size_t m = 0; m < stored->media.size(); ++m) {
    const bool sent = m < decoded.size() && decoded[m] != 0;
    w.Word(sent ? 1 : 0);
    if (sent) w.Sized(stored->media[m].data(), stored->media[m].size());
  }
}

// Parse one record of `reader` into `out`, checking it is planned sample `k` of `plan`.
Status DecodeSample(RecordReader& reader, const plan::StepPlan& plan, uint32_t k,
                    ReceivedBytes::Sample& out) {
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
  if (!out.status.ok()) return Status::OK();
  MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> line, reader.Sized());
  out.line = {reinterpret_cast<const char*>(line.data()), line.size()};
  MMPT_ASSIGN_OR_RETURN(uint32_t n, reader.Word());
  MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> ids, reader.Words(n));
  out.tokens = {reinterpret_cast<const int32_t*>(ids.data()), n};
  MMPT_ASSIGN_OR_RETURN(uint32_t items, reader.Word());
  for (uint32_t m = 0; m < items; ++m) {
    MMPT_ASSIGN_OR_RETURN(uint32_t sent, reader.Word());
    if (sent > 1) return Status::Corrupt("{}: media item {} has flag {}", reader.where(), m, sent);
    out.media.emplace_back();
    if (sent == 1) {
      MMPT_ASSIGN_OR_RETURN(out.media.back(), reader.Sized());
    }
  }
  return Status::OK();
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

uint64_t ExchangeRecordBytes(uint64_t line_bytes, uint32_t tokens, uint32_t media_items,
                             std::span<const uint64_t> sent_media_bytes) {
  uint64_t words = kHeaderWords + 1 + WordsOf(line_bytes) + 1 + tokens + 1 + media_items;
  for (uint64_t bytes : sent_media_bytes) words += 1 + WordsOf(bytes);
  return words * 4;
}

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
  std::vector<Result<Stored>> stored(samples.size(), Status::Internal("not read"));
  pool_.ParallelFor(0, samples.size(),
                    [&](size_t i) { stored[i] = ReadStored(*local_, *plan, samples[i]); });

  std::vector<std::pair<uint32_t, uint32_t>> items;  // (destination, sample)
  for (uint32_t q = 0; q < lists.send.size(); ++q) {
    for (uint32_t k : lists.send[q]) items.emplace_back(q, k);
  }
  if (records_.size() < items.size()) records_.resize(items.size());
  const store::Dataset& dataset = local_->dataset();
  std::vector<uint32_t> cp_rank_of(lists.send.size(), 0);  // each destination's, looked up once
  for (uint32_t q = 0; q < cp_rank_of.size(); ++q) cp_rank_of[q] = CpRankOf(q, plan->layout.cp);
  pool_.ParallelFor(0, items.size(), [&](size_t i) {
    const auto [q, k] = items[i];
    const Result<Stored>& s =
        stored[std::lower_bound(samples.begin(), samples.end(), k) - samples.begin()];
    std::vector<uint8_t> decoded;
    if (s.ok()) {
      const plan::PlannedSequence& seq = plan->sequences[k];
      const uint64_t global = *dataset.GlobalIndex(seq.source, seq.index);  // read above
      decoded = DecodedMedia(*plan, pack_of[k], k, cp_rank_of[q], dataset.media_meta(global));
    }
    EncodeSample(*plan, k, s, decoded, records_[i]);
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
    RecordReader reader(std::span<const uint32_t>(held->buffer).subspan(at / 4, bytes[q] / 4),
                        where);
    for (uint32_t k : lists.receive[q]) {
      const plan::PlannedSequence& seq = plan->sequences[k];
      MMPT_ASSIGN_OR_RETURN(uint64_t global, dataset.GlobalIndex(seq.source, seq.index));
      ReceivedBytes::Sample sample;
      MMPT_RETURN_IF_ERROR(DecodeSample(reader, *plan, k, sample));
      if (sample.status.ok() && sample.media.size() != dataset.media_meta(global).size()) {
        return Status::Corrupt("{}: sample {} of source {} came with {} media items, .meta has {}",
                               where, seq.index, seq.source, sample.media.size(),
                               dataset.media_meta(global).size());
      }
      // A sample twice in this rank's packs comes twice, perhaps with other media each time.
      auto [at_global, first] = held->by_global.try_emplace(global, std::move(sample));
      if (!first && at_global->second.status.ok()) {
        for (size_t m = 0; m < at_global->second.media.size(); ++m) {
          if (!at_global->second.media[m]) at_global->second.media[m] = sample.media[m];
        }
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
  source_->received().Put(step, std::move(held));
  return Status::OK();
}

ExchangeStats Exchanger::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace mmpt::load
