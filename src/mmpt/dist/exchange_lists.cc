#include "mmpt/dist/exchange_lists.h"

#include <algorithm>
#include <array>

namespace mmpt::dist {

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

}  // namespace mmpt::dist
