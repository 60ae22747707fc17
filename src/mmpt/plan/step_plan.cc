#include "mmpt/plan/step_plan.h"

#include <algorithm>
#include <utility>

#include "mmpt/core/hash.h"

namespace mmpt::plan {

cp::ThdSplitOptions Layout::SplitOptions() const {
  return cp::ThdSplitOptions{
      .cp = cp, .tp = tp, .sequence_parallel = tp > 1, .with_token_indices = false};
}

uint32_t Layout::PadMultiple() const {
  const Result<uint32_t> multiple = cp::PadMultiple(SplitOptions());
  return multiple.ok() ? *multiple : 0;  // only a layout Validate() refuses has none
}

Status Layout::Validate() const {
  if (dp == 0 || tp == 0 || pp == 0 || cp == 0 || ep == 0 || ga == 0 || mbs == 0) {
    return Status::InvalidArgument(
        "every parallel size must be at least 1 (dp {} tp {} pp {} cp {} ep {} ga {} mbs {})", dp,
        tp, pp, cp, ep, ga, mbs);
  }
  if (seq_len == 0) return Status::InvalidArgument("sequence length must be at least 1");
  if (dp % ep != 0) {
    return Status::InvalidArgument(
        "dp {} is not divisible by ep {}: expert-parallel groups are "
        "made of data-parallel ranks",
        dp, ep);
  }
  MMPT_RETURN_IF_ERROR(cp::PadMultiple(SplitOptions()).status());
  if ((cp > 1 || tp > 1) && seq_len % PadMultiple() != 0) {
    return Status::InvalidArgument("seq_len {} is not divisible by the pad multiple {} ({})",
                                   seq_len, PadMultiple(), tp > 1 ? "2·tp·cp" : "2·cp");
  }
  if (sync == SyncModel::kPipeline && pp == 1) {
    return Status::InvalidArgument("sync model 'pipeline' needs pp > 1");
  }
  return Status::OK();
}

uint64_t StepPlan::Hash() const {
  // Integers only, field by field in a fixed order, gathered into one buffer and hashed once:
  // what ranks must agree on is which samples go where; costs are derived from them.
  std::vector<uint32_t> words;
  words.reserve(16 + 4 * packs.size() + 8 * sequences.size() + 7 * images.size());
  auto put64 = [&](uint64_t v) {
    words.push_back(static_cast<uint32_t>(v));
    words.push_back(static_cast<uint32_t>(v >> 32));
  };
  put64(step);
  for (uint32_t v : {layout.dp, layout.tp, layout.pp, layout.cp, layout.ep, layout.ga, layout.mbs,
                     layout.seq_len, static_cast<uint32_t>(layout.sync)}) {
    words.push_back(v);
  }
  put64(packs.size());
  for (const PlannedPack& p : packs) {
    words.insert(words.end(), {p.sequence_begin, p.sequence_end, p.tokens, p.images});
  }
  put64(sequences.size());
  for (const PlannedSequence& s : sequences) {
    put64(s.index);
    words.insert(words.end(), {s.source, s.tokens, s.text_tokens, s.image_begin, s.image_end,
                               static_cast<uint32_t>(s.truncated)});
  }
  put64(images.size());
  for (const PlannedImage& im : images) {
    words.insert(words.end(), {im.sample_image, im.width, im.height, im.resized_width,
                               im.resized_height, im.llm_tokens, im.token_start, im.patches});
  }
  // The cp stage's decisions: each pack's padded boundaries and who encodes each image.
  put64(cp.size());
  for (const PackCp& c : cp) {
    words.push_back(c.split.pad_multiple);
    words.insert(words.end(), c.split.cu_seqlens_padded.begin(), c.split.cu_seqlens_padded.end());
    words.push_back(static_cast<uint32_t>(c.vision.policy));
    for (size_t i = 0; i < c.vision.encoders.size(); ++i) {
      const std::span<const uint32_t> encoders = c.vision.encoders[i];
      words.push_back(static_cast<uint32_t>(encoders.size()));
      words.insert(words.end(), encoders.begin(), encoders.end());
    }
  }
  put64(dropped.size());
  for (const SampleId& d : dropped) {
    words.push_back(d.source);
    put64(d.index);
  }
  // Videos and audio clips, hashed only when the plan has them, so an image-only plan hashes
  // as it did before they existed.
  if (!videos.empty() || !audios.empty()) {
    for (const PlannedSequence& s : sequences) {
      words.insert(words.end(), {s.video_begin, s.video_end, s.audio_begin, s.audio_end});
    }
    put64(videos.size());
    for (const PlannedVideo& v : videos) {
      words.insert(words.end(),
                   {v.sample_video, v.width, v.height, v.resized_width, v.resized_height, v.frames,
                    v.llm_tokens, v.token_start, v.patches});
    }
    put64(audios.size());
    for (const PlannedAudio& a : audios) {
      words.insert(words.end(), {a.sample_audio, a.samples, a.llm_tokens, a.token_start,
                                 static_cast<uint32_t>(a.joins_previous), a.track_offset});
    }
    for (const PackCp& c : cp) {
      for (size_t i = 0; i < c.audio.encoders.size(); ++i) {
        const std::span<const uint32_t> encoders = c.audio.encoders[i];
        words.push_back(static_cast<uint32_t>(encoders.size()));
        words.insert(words.end(), encoders.begin(), encoders.end());
      }
    }
  }
  return Hash64(std::as_bytes(std::span<const uint32_t>(words)), 0x6d6d7074706c616eULL);
}

std::vector<std::span<const PlannedAudio>> AudioClips(std::span<const PlannedAudio> audios) {
  std::vector<std::span<const PlannedAudio>> clips;
  for (size_t k = 0, first = 0; k < audios.size(); ++k) {
    if (k + 1 == audios.size() || !audios[k + 1].joins_previous) {
      clips.push_back(audios.subspan(first, k + 1 - first));
      first = k + 1;
    }
  }
  return clips;
}

Status StepPlan::Validate() const {
  if (packs.size() != layout.packs_per_step()) {
    return Status::Internal("step {}: {} packs, expected dp×ga×mbs = {}", step, packs.size(),
                            layout.packs_per_step());
  }
  uint32_t next_sequence = 0;
  for (size_t p = 0; p < packs.size(); ++p) {
    const PlannedPack& pack = packs[p];
    if (pack.sequence_begin != next_sequence || pack.sequence_end < pack.sequence_begin ||
        pack.sequence_end > sequences.size()) {
      return Status::Internal("step {} pack {}: sequence range [{}, {}) is not contiguous", step, p,
                              pack.sequence_begin, pack.sequence_end);
    }
    next_sequence = pack.sequence_end;
    uint64_t tokens = 0, pack_images = 0;
    for (const PlannedSequence& s : Sequences(pack)) {
      if (s.image_end < s.image_begin || s.image_end > images.size()) {
        return Status::Internal("step {} pack {}: image range out of bounds", step, p);
      }
      uint64_t image_end = 0;
      for (const PlannedImage& image : Images(s)) {
        if (image.token_start < image_end ||
            uint64_t{image.token_start} + image.llm_tokens > s.tokens) {
          return Status::Internal(
              "step {} pack {}: image tokens [{}, +{}) overlap or leave "
              "their sample's {}",
              step, p, image.token_start, image.llm_tokens, s.tokens);
        }
        image_end = uint64_t{image.token_start} + image.llm_tokens;
      }
      if (s.video_end < s.video_begin || s.video_end > videos.size() ||
          s.audio_end < s.audio_begin || s.audio_end > audios.size()) {
        return Status::Internal("step {} pack {}: video or audio range out of bounds", step, p);
      }
      if (s.video_end > s.video_begin || s.audio_end > s.audio_begin) {
        // Every media item's tokens, of any kind, inside the sample and apart from the others.
        std::vector<std::pair<uint64_t, uint64_t>> spans;
        for (const PlannedImage& m : Images(s)) spans.emplace_back(m.token_start, m.llm_tokens);
        for (const PlannedVideo& m : Videos(s)) spans.emplace_back(m.token_start, m.llm_tokens);
        for (const PlannedAudio& m : Audios(s)) spans.emplace_back(m.token_start, m.llm_tokens);
        std::sort(spans.begin(), spans.end());
        uint64_t end = 0;
        for (auto [start, count] : spans) {
          if (start < end || start + count > s.tokens) {
            return Status::Internal(
                "step {} pack {}: media tokens [{}, +{}) overlap or leave "
                "their sample's {}",
                step, p, start, count, s.tokens);
          }
          end = start + count;
        }
      }
      tokens += s.tokens;
      pack_images += s.image_end - s.image_begin;
    }
    if (tokens != pack.tokens || pack_images != pack.images) {
      return Status::Internal("step {} pack {}: holds {} tokens / {} images, records {} / {}", step,
                              p, tokens, pack_images, pack.tokens, pack.images);
    }
    if (tokens > layout.seq_len) {
      return Status::Internal("step {} pack {}: {} tokens exceed seq_len {}", step, p, tokens,
                              layout.seq_len);
    }
  }
  if (!cp.empty() && cp.size() != packs.size()) {
    return Status::Internal("step {}: the cp stage has {} entries for {} packs", step, cp.size(),
                            packs.size());
  }
  if (next_sequence != sequences.size()) {
    return Status::Internal("step {}: {} sequences belong to no pack", step,
                            sequences.size() - next_sequence);
  }
  return Status::OK();
}

StepPlan DealInPackingOrder(const StepPlan& plan) {
  // Best-fit decreasing opens packs in decreasing order of their largest sample (each pack's
  // opening sample is its largest), so sorting by it recovers the packer's output order.
  std::vector<uint32_t> by_order(plan.packs.size());
  std::vector<uint32_t> largest(plan.packs.size(), 0);
  for (uint32_t i = 0; i < by_order.size(); ++i) {
    by_order[i] = i;
    for (const auto& seq : plan.Sequences(plan.packs[i])) {
      largest[i] = std::max(largest[i], seq.tokens + seq.cp_padding);
    }
  }
  std::stable_sort(by_order.begin(), by_order.end(),
                   [&](uint32_t a, uint32_t b) { return largest[a] > largest[b]; });
  // Consecutive packs fill micro-step 0 of every rank, then micro-step 1, ... (Megatron's
  // sampler: micro-batch m of DP rank d holds global positions (m·dp + d)·mbs ...).
  const Layout& l = plan.layout;
  std::vector<uint32_t> order(plan.packs.size());
  for (uint32_t j = 0; j < order.size(); ++j) {
    const uint32_t micro = j / (l.dp * l.mbs), rank = (j / l.mbs) % l.dp, slot = j % l.mbs;
    order[plan.PackIndex(rank, micro, slot)] = by_order[j];
  }
  StepPlan out;
  out.step = plan.step;
  out.layout = plan.layout;
  out.packs.reserve(plan.packs.size());
  out.sequences.reserve(plan.sequences.size());
  out.images.reserve(plan.images.size());
  out.videos.reserve(plan.videos.size());
  out.audios.reserve(plan.audios.size());
  // Append a sequence's items of one kind to `to`, and set its range over them.
  auto move_items = [](auto items, auto& to, uint32_t& begin, uint32_t& end) {
    begin = static_cast<uint32_t>(to.size());
    to.insert(to.end(), items.begin(), items.end());
    end = static_cast<uint32_t>(to.size());
  };
  for (uint32_t p : order) {
    PlannedPack pack = plan.packs[p];
    pack.sequence_begin = static_cast<uint32_t>(out.sequences.size());
    for (PlannedSequence seq : plan.Sequences(plan.packs[p])) {
      move_items(plan.Images(seq), out.images, seq.image_begin, seq.image_end);
      move_items(plan.Videos(seq), out.videos, seq.video_begin, seq.video_end);
      move_items(plan.Audios(seq), out.audios, seq.audio_begin, seq.audio_end);
      out.sequences.push_back(seq);
    }
    pack.sequence_end = static_cast<uint32_t>(out.sequences.size());
    out.packs.push_back(pack);
    if (!plan.cp.empty()) out.cp.push_back(plan.cp[p]);  // a pack's cp stage moves with it
  }
  return out;
}

}  // namespace mmpt::plan
