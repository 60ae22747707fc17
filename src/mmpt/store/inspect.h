#pragma once

// What a dataset holds, per source, from its `.meta` tables alone (`mmpt inspect` prints it:
// app/reports.h).

#include <cstdint>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/dataset.h"

namespace mmpt::store {

/// Percentiles of one per-sample (or per-image) quantity.
struct Distribution {
  uint64_t count = 0;
  uint64_t total = 0;
  uint64_t min = 0, p10 = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
  std::vector<uint64_t> histogram;  // counts in power-of-two buckets: [0], [1,2), [2,4), ...
};

/// Summarize `values` (reordered in place). Percentiles are nearest-rank.
Distribution Summarize(std::vector<uint64_t>& values);

struct SourceSummary {
  std::string name;
  uint64_t shards = 0;
  uint64_t metadata_only_media = 0;
  Distribution text_tokens;        // per sample
  Distribution images;             // per sample
  Distribution image_tokens;       // per sample, under the manifest's vision preset
  Distribution tokens;             // per sample: text + image + video + audio tokens
  Distribution image_tokens_each;  // per image
  Distribution videos;             // per sample
  Distribution audios;             // per sample: audio items (a video's sound track one)
  Distribution video_ms_each;      // per video: duration in milliseconds
  Distribution audio_ms_each;      // per audio item: duration in milliseconds
  Distribution video_tokens;       // per sample, under the vision preset (qwen-vl-utils frames)
  Distribution audio_tokens;       // per sample, under the dataset's audio encoder preset
};

struct InspectReport {
  std::string dir;
  std::string vision;
  std::string audio;  // the manifest's (store::RecordedAudioPreset)
  std::string tokenizer;
  std::string chat_template;  // the name of the template samples are rendered through
  std::vector<SourceSummary> sources;
};

/// Summarize every source of `dataset` from its metadata: per-modality counts, image tokens
/// under the manifest's vision preset (cost module), and video and audio durations (their
/// tokens are not counted yet). Errors: NotFound for an unknown preset.
Result<InspectReport> Inspect(const Dataset& dataset);

}  // namespace mmpt::store
