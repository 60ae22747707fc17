#include "mmpt/plan/sample_padding.h"

#include "mmpt/cp/pack_load.h"
#include "mmpt/plan/pack_list_internal.h"

namespace mmpt::plan {
namespace {

uint32_t RoundUp(uint64_t value, uint32_t multiple) {
  return static_cast<uint32_t>((value + multiple - 1) / multiple * multiple);
}

}  // namespace

SamplePadding::SamplePadding(const cost::SampleTable& table, const cost::CostModel& model,
                             const Layout& layout, cp::VisionPolicy policy)
    : table_(&table), model_(&model), layout_(layout) {
  enabled_ = layout.cp > 1 && policy == cp::VisionPolicy::kNaive;
  if (!enabled_) return;
  double seconds = 0, tokens = 0;
  internal::PoolMedia media;
  for (uint32_t s = 0; s < table.num_sources(); ++s) {
    const uint64_t end = table.source_begin[s] + std::min(table.source_size(s), kMeanRows);
    for (uint64_t row = table.source_begin[s]; row < end; ++row) {
      // A row that is corrupt or cannot be costed is left out here; drawing it names it.
      const Result<cost::SampleCost> cost = cost::CostSample(table, model, row, &media.scratch);
      if (!cost.ok()) continue;
      const uint64_t length = uint64_t{table.text_tokens[row]} + cost->MediaTokens();
      if (length == 0 || length > layout.seq_len) continue;
      media.Clear();
      const auto items = VisionItems(media, media.Add(media.scratch, table.text_tokens[row]));
      seconds += cp::NaiveSequenceCost(RoundUp(length, layout.PadMultiple()), layout.cp, items) +
                 model.SequenceLlmSeconds(static_cast<uint32_t>(length));
      tokens += static_cast<double>(length);
    }
  }
  seconds_per_token_ = tokens > 0 ? seconds / tokens : 0;
}

std::vector<cp::CpImage> SamplePadding::VisionItems(const internal::PoolMedia& media,
                                                    uint32_t k) const {
  // Images and videos merged in token order (their token spans never overlap).
  const auto images = media.Images(k);
  const auto videos = media.Videos(k);
  std::vector<cp::CpImage> items;
  items.reserve(images.size() + videos.size());
  size_t i = 0, v = 0;
  while (i < images.size() || v < videos.size()) {
    if (v == videos.size() ||
        (i < images.size() && images[i].token_start <= videos[v].token_start)) {
      items.push_back({images[i].token_start, images[i].llm_tokens,
                       model_->VisionSeconds(images[i].vision_flops)});
      ++i;
    } else {
      items.push_back({videos[v].token_start, videos[v].llm_tokens,
                       model_->VisionSeconds(videos[v].vision_flops)});
      ++v;
    }
  }
  return items;
}

uint32_t SamplePadding::Of(const PlacedSample& sample, const internal::PoolMedia& media) const {
  if (!enabled_ || sample.tokens == 0) return 0;
  const std::vector<cp::CpImage> items = VisionItems(media, sample.media);
  if (items.empty()) return 0;
  const uint32_t cp = layout_.cp, chunks = 2 * cp, multiple = layout_.PadMultiple();
  const uint32_t base = RoundUp(sample.tokens, multiple);
  const uint32_t room = layout_.seq_len > base ? layout_.seq_len - base : 0;
  const uint32_t most = std::min(room, sample.tokens);
  // A boundary k·chunk (0 < k < 2·CP) moves past an item edge e when chunk ≥ e / k; chunks
  // are whole multiples of multiple / 2·CP.
  const uint32_t step = multiple / chunks;
  double best = cp::NaiveSequenceCost(base, cp, items);
  uint32_t best_padding = 0;
  for (const cp::CpImage& item : items) {
    for (uint64_t edge :
         {uint64_t{item.token_start}, uint64_t{item.token_start} + item.token_count}) {
      for (uint32_t k = 1; k < chunks; ++k) {
        const uint64_t chunk = RoundUp((edge + k - 1) / k, step);
        if (chunk * chunks <= base || chunk * chunks - base > most) continue;
        const uint32_t padding = static_cast<uint32_t>(chunk * chunks - base);
        const double cost =
            cp::NaiveSequenceCost(base + padding, cp, items) + seconds_per_token_ * padding;
        if (cost < best || (cost == best && padding < best_padding)) {
          best = cost;
          best_padding = padding;
        }
      }
    }
  }
  return best_padding;
}

}  // namespace mmpt::plan
