#include "mmpt/store/inspect.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <nlohmann/json.hpp>

#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/presets.h"
#include "mmpt/store/dataset_preset.h"
#include "mmpt/store/planning_table.h"

namespace mmpt::store {

Distribution Summarize(std::vector<uint64_t>& values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    size_t rank = static_cast<size_t>(q * (values.size() - 1) + 0.5);
    return values[std::min(rank, values.size() - 1)];
  };
  d.min = values.front();
  d.max = values.back();
  d.p10 = at(0.10);
  d.p50 = at(0.50);
  d.p90 = at(0.90);
  d.p99 = at(0.99);
  for (uint64_t v : values) {
    d.total += v;
    size_t bucket = v == 0 ? 0 : std::bit_width(v);
    if (d.histogram.size() <= bucket) d.histogram.resize(bucket + 1, 0);
    ++d.histogram[bucket];
  }
  return d;
}

Result<InspectReport> Inspect(const Dataset& dataset) {
  const Manifest& manifest = dataset.manifest();
  InspectReport report;
  report.dir = dataset.dir();
  report.vision = manifest.vision;
  report.audio = RecordedAudioPreset(manifest);
  report.tokenizer = manifest.tokenizer;
  const nlohmann::json chat = nlohmann::json::parse(manifest.chat_template, nullptr, false);
  report.chat_template = chat.is_object() ? chat.value("name", std::string()) : std::string();
  // Tokens as planning counts them: the dataset's planning table, costed under its presets (a
  // medium they cannot cost is an error naming it, never 0 tokens).
  MMPT_ASSIGN_OR_RETURN(cost::SampleTable table, OpenPlanningTable(dataset.dir(), manifest));
  MMPT_ASSIGN_OR_RETURN(std::string vision, DatasetVisionPreset(dataset.dir(), ""));
  MMPT_ASSIGN_OR_RETURN(cost::CostModel model,
                        cost::CostModel::FromPresets(vision, cost::Defaults::kLlm,
                                                     cost::Defaults::kHardware, report.audio));
  MMPT_ASSIGN_OR_RETURN(cost::CostedSamples costs, cost::CostSamples(table, model));
  struct Values {
    std::vector<uint64_t> text, images, image_tokens, tokens, each;
    std::vector<uint64_t> videos, audios, video_ms, audio_ms, video_tokens, audio_tokens;
    uint64_t shards = 0, metadata_only = 0;
  };
  std::vector<Values> values(dataset.sources().size());
  // PlanningTable's rows: a source's samples through its shards in manifest order.
  std::vector<uint64_t> next_row(table.source_begin.begin(), table.source_begin.end() - 1);
  for (size_t shard = 0; shard < dataset.num_shards(); ++shard) {
    const uint32_t source = dataset.shard_source(shard);
    Values& v = values[source];
    MMPT_ASSIGN_OR_RETURN(const std::shared_ptr<const MetaTable> open, dataset.MetaOf(shard));
    const MetaTable& meta = *open;
    ++v.shards;
    for (size_t i = 0; i < meta.num_samples(); ++i) {
      const uint64_t row = next_row[source]++;
      uint64_t videos = 0, audios = 0;
      for (const MediaMeta& m : meta.media_of(i)) {
        // A grouped video counts once; a video's sound track (its parts) once, as audio.
        if (!m.first_of_medium() && !(m.sound_track() && m.group == 0)) continue;
        if (m.flags & kMediaWithoutData) ++v.metadata_only;
        if (m.kind == MediaKind::kVideo) {
          ++videos;
          v.video_ms.push_back(m.duration_ms);
        } else if (m.kind == MediaKind::kAudio) {
          ++audios;
          v.audio_ms.push_back(m.duration_ms);
        }
      }
      for (uint64_t k = table.image_begin[row]; k < table.image_begin[row + 1]; ++k) {
        v.each.push_back(costs.images[k].llm_tokens);
      }
      v.text.push_back(table.text_tokens[row]);
      v.images.push_back(table.image_begin[row + 1] - table.image_begin[row]);
      v.videos.push_back(videos);
      v.audios.push_back(audios);
      v.image_tokens.push_back(costs.image_tokens[row]);
      v.video_tokens.push_back(costs.video_tokens.empty() ? 0 : costs.video_tokens[row]);
      v.audio_tokens.push_back(costs.audio_tokens.empty() ? 0 : costs.audio_tokens[row]);
      v.tokens.push_back(table.text_tokens[row] + costs.MediaTokens(row));
    }
  }
  for (size_t s = 0; s < values.size(); ++s) {
    SourceSummary summary;
    summary.name = dataset.sources()[s];
    summary.shards = values[s].shards;
    summary.metadata_only_media = values[s].metadata_only;
    summary.text_tokens = Summarize(values[s].text);
    summary.images = Summarize(values[s].images);
    summary.image_tokens = Summarize(values[s].image_tokens);
    summary.tokens = Summarize(values[s].tokens);
    summary.image_tokens_each = Summarize(values[s].each);
    summary.videos = Summarize(values[s].videos);
    summary.audios = Summarize(values[s].audios);
    summary.video_ms_each = Summarize(values[s].video_ms);
    summary.audio_ms_each = Summarize(values[s].audio_ms);
    summary.video_tokens = Summarize(values[s].video_tokens);
    summary.audio_tokens = Summarize(values[s].audio_tokens);
    report.sources.push_back(std::move(summary));
  }
  return report;
}

}  // namespace mmpt::store
