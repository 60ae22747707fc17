#include "mmpt/media/audio_in_video.h"

#include <algorithm>
#include <functional>

namespace mmpt::media {

namespace {

// Grid step f's time key, a float32 product as torch computes arange(t) · second_per_grid ·
// position_id_per_seconds.
float VideoKey(const AudioInVideoRule& rule, const AudioInVideo& item, uint32_t f) {
  return static_cast<float>(f) * item.second_per_grid_t * rule.position_id_per_seconds;
}

// get_chunked_index over `count` tokens whose keys `key(i)` ascend: a chunk ends before the
// first token whose key reaches the next multiple of `per_chunk`, and the next multiple is
// then one chunk on, whatever the key (the reference moves on one chunk per token). The
// chunks' ends, the last one `count`.
std::vector<uint32_t> ChunkEnds(uint32_t count, const std::function<int64_t(uint32_t)>& key,
                                int64_t per_chunk) {
  std::vector<uint32_t> ends;
  int64_t chunk = 1;
  for (uint32_t i = 0; i < count; ++i) {
    if (key(i) >= chunk * per_chunk) {
      ends.push_back(i);
      ++chunk;
    }
  }
  ends.push_back(count);
  return ends;
}

void Append(std::vector<AudioInVideoRun>& runs, bool video, uint32_t first, uint32_t end) {
  if (end > first) runs.push_back({video, first, end - first});
}

std::vector<AudioInVideoRun> ChunkedRuns(const AudioInVideoRule& rule, const AudioInVideo& item) {
  const uint32_t per_step = item.grid_h * item.grid_w;
  // int(position_id_per_seconds · seconds_per_chunk), as the processor computes it.
  const auto per_chunk =
      static_cast<int64_t>(rule.position_id_per_seconds * rule.seconds_per_chunk);
  // The truncated key, as get_rope_index compares it: an integer threshold splits it alike.
  const std::vector<uint32_t> video = ChunkEnds(
      item.video_tokens(),
      [&](uint32_t i) { return static_cast<int64_t>(VideoKey(rule, item, i / per_step)); },
      per_chunk);
  const std::vector<uint32_t> audio = ChunkEnds(
      item.audio_tokens, [](uint32_t i) { return int64_t{i}; }, per_chunk);
  std::vector<AudioInVideoRun> runs;
  for (size_t j = 0; j < std::max(video.size(), audio.size()); ++j) {
    if (j < video.size()) Append(runs, true, j == 0 ? 0 : video[j - 1], video[j]);
    if (j < audio.size()) Append(runs, false, j == 0 ? 0 : audio[j - 1], audio[j]);
  }
  return runs;
}

std::vector<AudioInVideoRun> MergedRuns(const AudioInVideoRule& rule, const AudioInVideo& item) {
  const uint32_t per_step = item.grid_h * item.grid_w;
  std::vector<AudioInVideoRun> runs;
  uint32_t audio = 0;
  for (uint32_t f = 0; f < item.grid_t; ++f) {
    // Audio token k goes first while k < key(f): a tie goes to the video (the reference
    // compares the float key with k).
    const double key = VideoKey(rule, item, f);
    uint32_t end = audio;
    while (end < item.audio_tokens && static_cast<double>(end) < key) ++end;
    Append(runs, false, audio, end);
    audio = end;
    if (!runs.empty() && runs.back().video) {
      runs.back().count += per_step;
    } else {
      Append(runs, true, f * per_step, (f + 1) * per_step);
    }
  }
  Append(runs, false, audio, item.audio_tokens);
  return runs;
}

}  // namespace

Result<AudioInVideoRule> AudioInVideoRuleOf(std::string_view model, float position_id_per_seconds) {
  if (!(position_id_per_seconds > 0)) {
    return Status::InvalidArgument("audio in video: position_id_per_seconds {} is not positive",
                                   position_id_per_seconds);
  }
  if (model == "qwen2.5-omni") {
    return AudioInVideoRule{AudioInVideoOrder::kChunks, position_id_per_seconds, 2, 0};
  }
  if (model == "qwen3-omni") {
    return AudioInVideoRule{AudioInVideoOrder::kTimeMerged, position_id_per_seconds, 0, 1};
  }
  return Status::NotFound("audio in video: no rule for model '{}' (qwen2.5-omni, qwen3-omni)",
                          model);
}

std::vector<AudioInVideoRun> AudioInVideoRuns(const AudioInVideoRule& rule,
                                              const AudioInVideo& item) {
  return rule.order == AudioInVideoOrder::kChunks ? ChunkedRuns(rule, item)
                                                  : MergedRuns(rule, item);
}

int32_t AudioInVideoPositions(const AudioInVideoRule& rule, const AudioInVideo& item,
                              std::span<const AudioInVideoRun> runs, int32_t start,
                              std::span<int32_t> t, std::span<int32_t> h, std::span<int32_t> w) {
  size_t i = 0;
  auto put = [&](int32_t pt, int32_t ph, int32_t pw) {
    t[i] = pt;
    h[i] = ph;
    w[i] = pw;
    ++i;
  };
  put(start, start, start);
  const int32_t second_start = start + rule.marker_step;
  put(second_start, second_start, second_start);
  const int32_t base = second_start + 1;
  const uint32_t per_step = item.grid_h * item.grid_w;
  int32_t last_largest = second_start;  // of the last run written
  for (const AudioInVideoRun& run : runs) {
    last_largest = base;
    for (uint32_t k = run.first; k < run.first + run.count; ++k) {
      if (!run.video) {
        const int32_t p = base + static_cast<int32_t>(k);
        put(p, p, p);
        last_largest = p;
        continue;
      }
      const uint32_t f = k / per_step, y = k % per_step / item.grid_w, x = k % item.grid_w;
      const int32_t key = static_cast<int32_t>(VideoKey(rule, item, f));
      put(base + key, base + static_cast<int32_t>(y), base + static_cast<int32_t>(x));
      last_largest = std::max({last_largest, t[i - 1], h[i - 1], w[i - 1]});
    }
  }
  const int32_t end = last_largest + 1;
  put(end, end, end);
  const int32_t second_end = end + rule.marker_step;
  put(second_end, second_end, second_end);
  return second_end + 1;
}

}  // namespace mmpt::media
