#include "mmpt/plan/pack_list_internal.h"

#include <algorithm>

#include <fmt/format.h>

namespace mmpt::plan::internal {

Result<FittedRow> FitRow(const cost::SampleTable& table, const cost::CostModel& model,
                         const PlannerConfig& config, uint64_t row) {
  MMPT_ASSIGN_OR_RETURN(cost::SampleCost cost, cost::CostSample(table, model, row));
  FittedRow out;
  const auto images = static_cast<uint32_t>(table.image_begin[row + 1] - table.image_begin[row]);
  out.fit = pack::FitToLength(table.text_tokens[row], cost.MediaTokens(), config.layout.seq_len,
                              config.overlong);
  if (config.max_images_per_pack != 0 && images > config.max_images_per_pack) {
    out.fit = pack::Fitted{.dropped = true};
  }
  out.sample = {.row = row,
                .tokens = out.fit.tokens,
                .text_tokens = out.fit.text_tokens,
                .images = images,
                .vision_seconds = cost.vision_seconds,
                .audio_seconds = cost.audio_seconds};
  return out;
}

Result<std::optional<Drawn>> DrawNext(SampleOrder& order, const cost::SampleTable& table,
                                      const cost::CostModel& model, const PlannerConfig& config,
                                      StepStats* stats, std::vector<uint64_t>* dropped_rows) {
  const SampleOrder::Draw draw = order.Next();
  const uint64_t row = table.source_begin[draw.source] + draw.index;
  ++stats->drawn;
  MMPT_ASSIGN_OR_RETURN(FittedRow fitted, FitRow(table, model, config, row));
  if (fitted.fit.dropped) {
    dropped_rows->push_back(row);
    return std::optional<Drawn>();
  }
  stats->truncated += fitted.fit.truncated;
  return std::optional<Drawn>(Drawn{draw.source, fitted.sample});
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
    MMPT_ASSIGN_OR_RETURN(FittedRow fitted,
                          FitRow(*table_, *model_, config_, table_->source_begin[s] + src.counted));
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

std::vector<MediaAt> MediaPositions(const cost::ItemCosts& items, uint32_t text_tokens) {
  const std::span<const uint32_t> image_positions = items.row.image_text_positions;
  const std::span<const cost::VideoItem> videos = items.row.videos;
  const std::span<const cost::AudioItem> audios = items.row.audios;
  const uint64_t num_images = image_positions.size();
  std::vector<MediaAt> out;
  out.reserve(num_images + videos.size() + audios.size());
  size_t i = 0, v = 0, a = 0;
  uint32_t media_tokens_before = 0;
  constexpr uint64_t kNone = UINT64_MAX;  // past every text position
  auto at = [&](MediaAt::Kind kind, size_t index, uint64_t text_position, uint32_t tokens) {
    out.push_back({kind, static_cast<uint32_t>(index),
                   static_cast<uint32_t>(std::min<uint64_t>(text_position, text_tokens)) +
                       media_tokens_before,
                   tokens});
    media_tokens_before += tokens;
  };
  while (i < num_images || v < videos.size() || a < audios.size()) {
    const uint64_t at_image = i < num_images ? image_positions[i] : kNone;
    const uint64_t at_video = v < videos.size() ? videos[v].text_position : kNone;
    const uint64_t at_audio = a < audios.size() ? audios[a].text_position : kNone;
    if (at_image != kNone && at_image <= at_video && at_image <= at_audio) {
      at(MediaAt::kImage, i, at_image, items.images[i].llm_tokens);
      ++i;
    } else if (at_video != kNone &&
               (at_video < at_audio ||
                (at_video == at_audio && videos[v].record <= audios[a].record))) {
      at(MediaAt::kVideo, v, at_video, items.videos[v].llm_tokens);
      ++v;
    } else {
      at(MediaAt::kAudio, a, at_audio, items.audios[a].llm_tokens);
      ++a;
    }
  }
  return out;
}

namespace {

// Append sample `s`'s images, videos and audio clips to `plan`, each at its token position
// (MediaPositions).
// Memory hints for the rows placed after rows[k] (a table larger than the caches): the text
// tokens and image range of the row kRowsAhead on, the images and positions of the one half as
// far (its range is in the cache by then). Hints only.
constexpr size_t kRowsAhead = 16;
void PrefetchRows(const cost::SampleTable& table, std::span<const uint64_t> rows, size_t k) {
  if (k + kRowsAhead < rows.size()) {
    __builtin_prefetch(&table.text_tokens[rows[k + kRowsAhead]]);
    __builtin_prefetch(&table.image_begin[rows[k + kRowsAhead]]);
  }
  if (k + kRowsAhead / 2 < rows.size()) {
    const uint64_t image = table.image_begin[rows[k + kRowsAhead / 2]];
    if (image < table.images.size()) {
      __builtin_prefetch(&table.images[image]);
      __builtin_prefetch(&table.image_text_positions[image]);
    }
  }
}

// `items`: scratch for the sample's item costs. The sample was costed when drawn, so costing it
// again cannot fail.
void PlaceMedia(const cost::SampleTable& table, const cost::CostModel& model, const PlacedSample& s,
                cost::ItemCosts* items, StepPlan* plan) {
  MMPT_CHECK(cost::CostSample(table, model, s.row, items).ok());
  const cost::ItemCosts& costed = *items;
  const std::span<const cost::ImageSize> images = costed.row.images;
  const std::span<const cost::VideoItem> videos = costed.row.videos;
  const std::span<const cost::AudioItem> audios = costed.row.audios;
  for (const MediaAt& m : MediaPositions(costed, s.text_tokens)) {
    switch (m.kind) {
      case MediaAt::kImage: {
        const cost::ImageCost& c = costed.images[m.index];
        plan->images.push_back(PlannedImage{m.index, images[m.index].width, images[m.index].height,
                                            c.resized_width, c.resized_height, c.llm_tokens,
                                            m.token_start, c.patches, c.train_flops});
        break;
      }
      case MediaAt::kVideo: {
        const cost::VideoCost& c = costed.videos[m.index];
        const cost::VideoItem& video = videos[m.index];
        plan->videos.push_back(PlannedVideo{
            m.index, video.width, video.height, c.resized_width, c.resized_height, c.sampled_frames,
            c.llm_tokens, m.token_start, c.patches, c.train_flops, c.second_per_grid_t});
        break;
      }
      case MediaAt::kAudio: {
        const cost::AudioCost& c = costed.audios[m.index];
        plan->audios.push_back(PlannedAudio{
            m.index, c.llm_tokens, m.token_start, c.train_flops, audios[m.index].samples,
            c.valid_frames, audios[m.index].joins_previous, audios[m.index].track_offset});
        break;
      }
    }
  }
}

}  // namespace

StepPlan Assemble(uint64_t step, const Layout& layout, const PackList& packs,
                  std::span<const uint32_t> assignment, std::span<const balance::PackCost> costs,
                  const cost::SampleTable& table, const cost::CostModel& model,
                  std::span<const uint64_t> dropped_rows) {
  StepPlan plan;
  cost::ItemCosts items;
  plan.step = step;
  plan.layout = layout;
  plan.packs.reserve(assignment.size());
  plan.sequences.reserve(packs.samples.size());
  size_t num_images = 0;
  std::vector<uint64_t> rows;  // in the order they are placed: asked of memory ahead
  rows.reserve(packs.samples.size());
  for (uint32_t p : assignment) {
    for (const PlacedSample& s : packs.Pack(p)) {
      num_images += s.images;
      rows.push_back(s.row);
    }
  }
  plan.images.reserve(num_images);
  size_t placed = 0;
  for (uint32_t p : assignment) {
    PlannedPack pack;
    pack.sequence_begin = static_cast<uint32_t>(plan.sequences.size());
    for (const PlacedSample& s : packs.Pack(p)) {
      PrefetchRows(table, rows, placed++);
      PlannedSequence seq;
      seq.source = table.SourceOfRow(s.row);
      seq.index = s.row - table.source_begin[seq.source];
      seq.tokens = s.tokens;
      seq.text_tokens = s.text_tokens;
      seq.cp_padding = s.cp_padding;
      seq.truncated = s.text_tokens < table.text_tokens[s.row];
      seq.image_begin = static_cast<uint32_t>(plan.images.size());
      seq.video_begin = static_cast<uint32_t>(plan.videos.size());
      seq.audio_begin = static_cast<uint32_t>(plan.audios.size());
      PlaceMedia(table, model, s, &items, &plan);
      seq.image_end = static_cast<uint32_t>(plan.images.size());
      seq.video_end = static_cast<uint32_t>(plan.videos.size());
      seq.audio_end = static_cast<uint32_t>(plan.audios.size());
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
