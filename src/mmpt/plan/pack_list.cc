#include "mmpt/plan/pack_list_internal.h"

#include <algorithm>

#include <fmt/format.h>

namespace mmpt::plan::internal {

Result<FittedRow> FitRow(const cost::SampleTable& table, const cost::CostModel& model,
                         const PlannerConfig& config, uint32_t source, uint64_t row,
                         PoolMedia* media) {
  cost::ItemCosts* items = media != nullptr ? &media->scratch : nullptr;
  MMPT_ASSIGN_OR_RETURN(cost::SampleCost cost, cost::CostSample(table, model, row, items));
  FittedRow out;
  const auto images = static_cast<uint32_t>(table.image_begin[row + 1] - table.image_begin[row]);
  out.fit = pack::FitToLength(table.text_tokens[row], cost.MediaTokens(), config.layout.seq_len,
                              config.overlong);
  if (config.max_images_per_pack != 0 && images > config.max_images_per_pack) {
    out.fit = pack::Fitted{.dropped = true};
  }
  out.sample = {.row = row,
                .source = source,
                .tokens = out.fit.tokens,
                .text_tokens = out.fit.text_tokens,
                .images = images,
                .truncated = out.fit.truncated,
                .vision_seconds = cost.vision_seconds,
                .audio_seconds = cost.audio_seconds};
  if (media != nullptr && !out.fit.dropped) {
    out.sample.media = media->Add(*items, out.fit.text_tokens);
  }
  return out;
}

Result<std::optional<PlacedSample>> FitDraw(const SampleOrder::Draw& draw,
                                            const cost::SampleTable& table,
                                            const cost::CostModel& model,
                                            const PlannerConfig& config, StepStats* stats,
                                            std::vector<uint64_t>* dropped_rows, PoolMedia* media) {
  const uint64_t row = table.source_begin[draw.source] + draw.index;
  ++stats->drawn;
  MMPT_ASSIGN_OR_RETURN(FittedRow fitted, FitRow(table, model, config, draw.source, row, media));
  if (fitted.fit.dropped) {
    dropped_rows->push_back(row);
    return std::optional<PlacedSample>();
  }
  stats->truncated += fitted.fit.truncated;
  return std::optional<PlacedSample>(fitted.sample);
}

uint32_t PoolMedia::Add(const cost::ItemCosts& costed, uint32_t text_tokens) {
  const std::span<const cost::ImageSize> sizes = costed.row.images;
  const std::span<const uint32_t> image_positions = costed.row.image_text_positions;
  const std::span<const cost::VideoItem> video_items = costed.row.videos;
  const std::span<const cost::AudioItem> audio_items = costed.row.audios;
  size_t i = 0, v = 0, a = 0;
  uint32_t media_tokens_before = 0;
  constexpr uint64_t kNone = UINT64_MAX;  // past every text position
  // The item's first token: the text before it, cut at the kept text, and the media before it.
  auto start = [&](uint64_t text_position, uint32_t tokens) {
    const uint32_t at =
        static_cast<uint32_t>(std::min<uint64_t>(text_position, text_tokens)) + media_tokens_before;
    media_tokens_before += tokens;
    return at;
  };
  while (i < sizes.size() || v < video_items.size() || a < audio_items.size()) {
    const uint64_t at_image = i < sizes.size() ? image_positions[i] : kNone;
    const uint64_t at_video = v < video_items.size() ? video_items[v].text_position : kNone;
    const uint64_t at_audio = a < audio_items.size() ? audio_items[a].text_position : kNone;
    if (at_image != kNone && at_image <= at_video && at_image <= at_audio) {
      const cost::ImageCost& c = costed.images[i];
      images.push_back(PlannedImage{static_cast<uint32_t>(i), sizes[i].width, sizes[i].height,
                                    c.resized_width, c.resized_height, c.llm_tokens,
                                    start(at_image, c.llm_tokens), c.patches, c.train_flops});
      ++i;
    } else if (at_video != kNone &&
               (at_video < at_audio ||
                (at_video == at_audio && video_items[v].record <= audio_items[a].record))) {
      const cost::VideoCost& c = costed.videos[v];
      const cost::VideoItem& video = video_items[v];
      videos.push_back(PlannedVideo{static_cast<uint32_t>(v), video.width, video.height,
                                    c.resized_width, c.resized_height, c.sampled_frames,
                                    c.llm_tokens, start(at_video, c.llm_tokens), c.patches,
                                    c.train_flops, c.second_per_grid_t});
      ++v;
    } else {
      const cost::AudioCost& c = costed.audios[a];
      const cost::AudioItem& audio = audio_items[a];
      audios.push_back(PlannedAudio{static_cast<uint32_t>(a), c.llm_tokens,
                                    start(at_audio, c.llm_tokens), c.train_flops, audio.samples,
                                    c.valid_frames, audio.joins_previous, audio.track_offset});
      ++a;
    }
  }
  begin.push_back({static_cast<uint32_t>(images.size()), static_cast<uint32_t>(videos.size()),
                   static_cast<uint32_t>(audios.size())});
  return size() - 1;
}

void PoolMedia::PopBack() {
  begin.pop_back();
  images.resize(begin.back().image);
  videos.resize(begin.back().video);
  audios.resize(begin.back().audio);
}

void PoolMedia::Clear() {
  images.clear();
  videos.clear();
  audios.clear();
  begin.assign(1, Begin{});
}

namespace {
// Rows a source is first counted over (PlaceableCounter::Start): its mean tokens per draw.
constexpr uint64_t kFirstCount = 4096;
}  // namespace

PlaceableCounter::PlaceableCounter(const cost::SampleTable& table, const cost::CostModel& model,
                                   const PlannerConfig& config)
    : table_(&table), model_(&model), config_(config), sources_(table.num_sources()) {}

Status PlaceableCounter::CountTo(uint32_t s, uint64_t rows) {
  Source& src = sources_[s];
  const uint64_t end = std::min(rows, table_->source_size(s));
  for (; src.counted < end; ++src.counted) {
    MMPT_ASSIGN_OR_RETURN(FittedRow fitted, FitRow(*table_, *model_, config_, s,
                                                   table_->source_begin[s] + src.counted));
    src.samples += !fitted.fit.dropped;
    src.tokens += fitted.fit.tokens;
  }
  return Status::OK();
}

Status PlaceableCounter::Start(const SampleOrder& order, uint64_t samples) {
  std::vector<uint32_t> drawn;
  for (uint32_t s = 0; s < sources_.size(); ++s) {
    if (order.Share(s) > 0) drawn.push_back(s);
  }
  for (uint32_t s : drawn) MMPT_RETURN_IF_ERROR(CountTo(s, kFirstCount));
  // Further, doubling, only while the counted rows hold fewer than `samples` (or none).
  for (uint64_t rows = 2 * kFirstCount; counted_samples() < std::max<uint64_t>(samples, 1);
       rows *= 2) {
    bool more = false;
    for (uint32_t s : drawn) {
      more |= sources_[s].counted < table_->source_size(s);
      MMPT_RETURN_IF_ERROR(CountTo(s, rows));
    }
    if (!more) break;
  }
  if (counted_samples() == 0) {
    return Status::InvalidArgument(
        "every sample of the corpus is dropped: none fits seq_len {} under the '{}' policy{}",
        config_.layout.seq_len, pack::OverlongPolicyName(config_.overlong),
        config_.max_images_per_pack == 0
            ? ""
            : fmt::format(" with at most {} images", config_.max_images_per_pack));
  }
  return Status::OK();
}

uint64_t PlaceableCounter::counted_samples() const {
  uint64_t total = 0;
  for (const Source& src : sources_) total += src.samples;
  return total;
}

double PlaceableCounter::TokensPerDraw(uint32_t s) const {
  const Source& src = sources_[s];
  return src.counted == 0 ? 0.0
                          : static_cast<double>(src.tokens) / static_cast<double>(src.counted);
}

Result<bool> PlaceableCounter::AllPooledSlow(uint32_t s, uint64_t pooled) {
  const uint64_t size = table_->source_size(s);
  while (sources_[s].samples <= pooled && sources_[s].counted < size) {
    MMPT_RETURN_IF_ERROR(CountTo(s, std::max(2 * sources_[s].counted, kFirstCount)));
  }
  return sources_[s].counted == size && sources_[s].samples == pooled;
}

std::vector<balance::PackCost> CostPacks(const PackList& packs, const cost::CostModel& model,
                                         uint32_t seq_len) {
  std::vector<balance::PackCost> out(packs.size());
  for (size_t p = 0; p < packs.size(); ++p) {
    uint32_t tokens = 0;
    for (const PlacedSample& s : packs.Pack(p)) {
      out[p].encoder[balance::kVisionEncoder] += s.vision_seconds;
      out[p].encoder[balance::kAudioEncoder] += s.audio_seconds;
      out[p].llm += model.SequenceLlmSeconds(s.tokens);
      tokens += s.tokens;
    }
    out[p].llm += model.PaddingLlmSeconds(seq_len - tokens);
  }
  return out;
}

StepPlan Assemble(uint64_t step, const Layout& layout, const PackList& packs,
                  std::span<const uint32_t> assignment, std::span<const balance::PackCost> costs,
                  const cost::SampleTable& table, const PoolMedia& media,
                  std::span<const uint64_t> dropped_rows, StepPlan recycled) {
  StepPlan plan = std::move(recycled);
  plan.packs.clear();
  plan.sequences.clear();
  plan.images.clear();
  plan.videos.clear();
  plan.audios.clear();
  plan.dropped.clear();
  plan.estimate = {};
  plan.step = step;
  plan.layout = layout;
  // Room for this step, and some for the next steps' that may reuse the memory.
  auto reserve = [](auto& v, size_t n) {
    if (v.capacity() < n) v.reserve(n + n / 16);
  };
  reserve(plan.packs, assignment.size());
  reserve(plan.sequences, packs.samples.size());
  reserve(plan.images, media.images.size());
  reserve(plan.videos, media.videos.size());
  reserve(plan.audios, media.audios.size());
  for (uint32_t p : assignment) {
    PlannedPack pack;
    pack.sequence_begin = static_cast<uint32_t>(plan.sequences.size());
    for (const PlacedSample& s : packs.Pack(p)) {
      PlannedSequence seq;
      seq.source = s.source;
      seq.index = s.row - table.source_begin[s.source];
      seq.tokens = s.tokens;
      seq.text_tokens = s.text_tokens;
      seq.cp_padding = s.cp_padding;
      seq.truncated = s.truncated;
      auto append = [](auto& to, auto items, uint32_t* begin, uint32_t* end) {
        *begin = static_cast<uint32_t>(to.size());
        to.insert(to.end(), items.begin(), items.end());
        *end = static_cast<uint32_t>(to.size());
      };
      append(plan.images, media.Images(s.media), &seq.image_begin, &seq.image_end);
      append(plan.videos, media.Videos(s.media), &seq.video_begin, &seq.video_end);
      append(plan.audios, media.Audios(s.media), &seq.audio_begin, &seq.audio_end);
      pack.tokens += s.tokens;
      pack.images += seq.image_end - seq.image_begin;
      plan.sequences.push_back(seq);
    }
    pack.sequence_end = static_cast<uint32_t>(plan.sequences.size());
    pack.vision_seconds = costs[p].vision();
    pack.audio_seconds = costs[p].audio();
    pack.llm_seconds = costs[p].llm;
    plan.packs.push_back(pack);
  }
  plan.dropped.reserve(dropped_rows.size());
  for (uint64_t row : dropped_rows) {
    const uint32_t source = table.SourceOfRow(row);
    plan.dropped.push_back({source, row - table.source_begin[source]});
  }
  return plan;
}

}  // namespace mmpt::plan::internal
