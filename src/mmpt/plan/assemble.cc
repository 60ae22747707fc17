#include "mmpt/plan/assemble_internal.h"

#include <algorithm>

#include <fmt/format.h>

namespace mmpt::plan::internal {

pack::Fitted FitRow(const cost::SampleTable& table, const cost::CostedSamples& costs,
                    const PlannerConfig& config, uint64_t row) {
  pack::Fitted fit = pack::FitToLength(table.text_tokens[row], costs.MediaTokens(row),
                                       config.layout.seq_len, config.overlong);
  if (config.max_images_per_pack != 0 &&
      table.image_begin[row + 1] - table.image_begin[row] > config.max_images_per_pack) {
    fit = pack::Fitted{.dropped = true};
  }
  return fit;
}

std::optional<Drawn> DrawNext(SampleOrder& order, const cost::SampleTable& table,
                              const cost::CostedSamples& costs, const PlannerConfig& config,
                              StepStats* stats, std::vector<uint64_t>* dropped_rows) {
  const SampleOrder::Draw draw = order.Next();
  const uint64_t row = table.source_begin[draw.source] + draw.index;
  ++stats->drawn;
  const pack::Fitted fit = FitRow(table, costs, config, row);
  if (fit.dropped) {
    dropped_rows->push_back(row);
    return std::nullopt;
  }
  stats->truncated += fit.truncated;
  return Drawn{draw.source, {row, fit.tokens, fit.text_tokens}};
}

Result<std::vector<Placeable>> PlaceableBySource(const cost::SampleTable& table,
                                                 const cost::CostedSamples& costs,
                                                 const PlannerConfig& config,
                                                 const SampleOrder& order) {
  std::vector<Placeable> placeable(table.num_sources());
  uint64_t total = 0;
  for (uint32_t s = 0; s < table.num_sources(); ++s) {
    if (order.Share(s) == 0) continue;
    for (uint64_t row = table.source_begin[s]; row < table.source_begin[s + 1]; ++row) {
      const pack::Fitted fit = FitRow(table, costs, config, row);
      placeable[s].samples += !fit.dropped;
      placeable[s].tokens += fit.tokens;
    }
    total += placeable[s].samples;
  }
  if (total == 0) {
    return Status::InvalidArgument(
        "every sample of the corpus is dropped: none fits seq_len {} under the '{}' policy{}",
        config.layout.seq_len, pack::OverlongPolicyName(config.overlong),
        config.max_images_per_pack == 0
            ? ""
            : fmt::format(" with at most {} images", config.max_images_per_pack));
  }
  return placeable;
}

balance::Grid GridOf(const Layout& layout) {
  return balance::Grid{layout.dp, layout.ga, layout.mbs, layout.ep, layout.pp, layout.sync};
}

std::vector<balance::PackCost> CostPacks(const PackList& packs, const cost::CostedSamples& costs,
                                         const cost::CostModel& model, uint32_t seq_len) {
  std::vector<balance::PackCost> out(packs.size());
  for (size_t p = 0; p < packs.size(); ++p) {
    uint32_t tokens = 0;
    for (const PlacedSample& s : packs.Pack(p)) {
      out[p].encoder[balance::kVisionEncoder] += costs.vision_seconds[s.row];
      out[p].encoder[balance::kAudioEncoder] += costs.AudioSeconds(s.row);
      out[p].llm += model.SequenceLlmSeconds(s.tokens);
      tokens += s.tokens;
    }
    out[p].llm += model.PaddingLlmSeconds(seq_len - tokens);
  }
  return out;
}

namespace {

// Append sample `s`'s images, videos and audio clips to `plan`, each at its token position: the
// text before it (cut at the kept text) plus the tokens of every media item before it. Items
// follow their text positions; at an equal position images come first, then videos, then audio.
void PlaceMedia(const cost::SampleTable& table, const cost::CostedSamples& costed,
                const PlacedSample& s, StepPlan* plan) {
  const uint64_t row = s.row;
  const uint64_t images = table.image_begin[row];
  const std::span<const cost::VideoItem> videos = table.VideosOf(row);
  const std::span<const cost::AudioItem> audios = table.AudiosOf(row);
  const uint64_t first_video = videos.empty() ? 0 : table.video_begin[row];
  const uint64_t first_audio = audios.empty() ? 0 : table.audio_begin[row];
  const uint64_t num_images = table.image_begin[row + 1] - images;
  size_t i = 0, v = 0, a = 0;
  uint32_t media_tokens_before = 0;
  constexpr uint64_t kNone = UINT64_MAX;  // past every text position
  while (i < num_images || v < videos.size() || a < audios.size()) {
    const uint64_t at_image = i < num_images ? table.image_text_positions[images + i] : kNone;
    const uint64_t at_video = v < videos.size() ? videos[v].text_position : kNone;
    const uint64_t at_audio = a < audios.size() ? audios[a].text_position : kNone;
    if (at_image != kNone && at_image <= at_video && at_image <= at_audio) {
      const uint64_t k = images + i;
      const cost::ImageCost& c = costed.images[k];
      plan->images.push_back(PlannedImage{
          static_cast<uint32_t>(i), table.images[k].width, table.images[k].height, c.resized_width,
          c.resized_height, c.llm_tokens,
          static_cast<uint32_t>(std::min<uint64_t>(at_image, s.text_tokens)) + media_tokens_before,
          c.patches, c.train_flops});
      media_tokens_before += c.llm_tokens;
      ++i;
    } else if (at_video != kNone && at_video <= at_audio) {
      const cost::VideoCost& c = costed.videos[first_video + v];
      plan->videos.push_back(PlannedVideo{
          static_cast<uint32_t>(v), videos[v].width, videos[v].height, c.resized_width,
          c.resized_height, c.sampled_frames, c.llm_tokens,
          static_cast<uint32_t>(std::min<uint64_t>(at_video, s.text_tokens)) + media_tokens_before,
          c.patches, c.train_flops, c.second_per_grid_t});
      media_tokens_before += c.llm_tokens;
      ++v;
    } else {
      const cost::AudioCost& c = costed.audios[first_audio + a];
      plan->audios.push_back(PlannedAudio{
          static_cast<uint32_t>(a), audios[a].duration_ms, c.llm_tokens,
          static_cast<uint32_t>(std::min<uint64_t>(at_audio, s.text_tokens)) + media_tokens_before,
          c.train_flops, c.samples, c.valid_frames});
      media_tokens_before += c.llm_tokens;
      ++a;
    }
  }
}

}  // namespace

StepPlan Assemble(uint64_t step, const Layout& layout, const PackList& packs,
                  std::span<const uint32_t> assignment, std::span<const balance::PackCost> costs,
                  const cost::SampleTable& table, const cost::CostedSamples& costed,
                  std::span<const uint64_t> dropped_rows) {
  StepPlan plan;
  plan.step = step;
  plan.layout = layout;
  plan.packs.reserve(assignment.size());
  plan.sequences.reserve(packs.samples.size());
  size_t num_images = 0;
  for (const PlacedSample& s : packs.samples) {
    num_images += table.image_begin[s.row + 1] - table.image_begin[s.row];
  }
  plan.images.reserve(num_images);
  for (uint32_t p : assignment) {
    PlannedPack pack;
    pack.sequence_begin = static_cast<uint32_t>(plan.sequences.size());
    for (const PlacedSample& s : packs.Pack(p)) {
      PlannedSequence seq;
      seq.source = table.SourceOfRow(s.row);
      seq.index = s.row - table.source_begin[seq.source];
      seq.tokens = s.tokens;
      seq.text_tokens = s.text_tokens;
      seq.truncated = s.text_tokens < table.text_tokens[s.row];
      seq.image_begin = static_cast<uint32_t>(plan.images.size());
      seq.video_begin = static_cast<uint32_t>(plan.videos.size());
      seq.audio_begin = static_cast<uint32_t>(plan.audios.size());
      PlaceMedia(table, costed, s, &plan);
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
