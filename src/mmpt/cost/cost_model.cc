#include "mmpt/cost/cost_model.h"

#include "mmpt/cost/presets.h"

namespace mmpt::cost {

CostModel::CostModel(VisionConfig vision, LlmConfig llm, HardwareConfig hardware,
                     bool pad_to_seq_len, std::optional<AudioConfig> audio)
    : vision_(std::move(vision)),
      audio_(std::move(audio)),
      llm_(std::move(llm)),
      hardware_(std::move(hardware)),
      pad_to_seq_len_(pad_to_seq_len) {
  linear_seconds_per_token_ = hardware_.LlmSeconds(llm_.LinearTrainFlopsPerToken());
  // AttentionTrainFlops(1) counts exactly one (query, key) pair.
  attention_seconds_per_pair_ = hardware_.AttentionSeconds(llm_.AttentionTrainFlops(1));
}

Result<CostModel> CostModel::FromPresets(std::string_view vision, std::string_view llm,
                                         std::string_view hardware, std::string_view audio) {
  MMPT_ASSIGN_OR_RETURN(VisionConfig v, LoadVisionPreset(vision));
  MMPT_ASSIGN_OR_RETURN(LlmConfig l, LoadLlmPreset(llm));
  MMPT_ASSIGN_OR_RETURN(HardwareConfig h, LoadHardwarePreset(hardware));
  std::optional<AudioConfig> a;
  if (!audio.empty()) {
    MMPT_ASSIGN_OR_RETURN(a, LoadAudioPreset(audio));
  }
  return CostModel(std::move(v), std::move(l), std::move(h), /*pad_to_seq_len=*/true, std::move(a));
}

Result<AudioCost> CostModel::Audio(const AudioItem& audio) const {
  if (!audio_) return Status::InvalidArgument("the cost model has no audio encoder preset");
  MMPT_ASSIGN_OR_RETURN(AudioCost cost, CostAudio(*audio_, audio.samples, llm_.hidden));
  if (audio.track_offset > 0) {  // a later part of a sound track: its share of the track's
    const media::LogMelConfig& mel = audio_->log_mel;
    const uint32_t before = media::ValidFrames(mel, audio.track_offset);
    const uint32_t through = media::ValidFrames(mel, uint64_t{audio.track_offset} + audio.samples);
    cost.valid_frames = through - before;
    cost.llm_tokens =
        media::AudioTokens(mel.tokens, through) - media::AudioTokens(mel.tokens, before);
  }
  return cost;
}

namespace {

// "source 'S' sample I <kind> K": where a table row's item is, for errors.
std::string ItemName(const SampleTable& table, uint64_t row, std::string_view kind, uint64_t item) {
  uint32_t s = table.SourceOfRow(row);
  return fmt::format("source '{}' sample {} {} {}", table.source_names[s],
                     row - table.source_begin[s], kind, item);
}

// Cost `items` (one kind of a sample's) with `cost_one`, appending each item's cost to `costs`
// (when given) and adding its LLM tokens and encoder seconds to the sums.
template <typename Item, typename Cost, typename CostOne>
Status CostItems(const SampleTable& table, const CostModel& model, uint64_t row,
                 std::string_view kind, std::span<const Item> items, CostOne cost_one,
                 std::vector<Cost>* costs, uint64_t* tokens, double* seconds) {
  for (size_t i = 0; i < items.size(); ++i) {
    auto cost = cost_one(items[i]);
    if (!cost.ok()) return cost.status().WithContext(ItemName(table, row, kind, i));
    if (costs != nullptr) costs->push_back(*cost);
    *tokens += cost->llm_tokens;
    *seconds += model.VisionSeconds(cost->train_flops);
  }
  return Status::OK();
}

}  // namespace

void ItemCosts::Clear() {
  images.clear();
  videos.clear();
  audios.clear();
}

Result<SampleCost> CostSample(const SampleTable& table, const CostModel& model, uint64_t row,
                              ItemCosts* items) {
  MMPT_ASSIGN_OR_RETURN(const RowItems r, table.Row(row));
  if (items != nullptr) {
    items->Clear();
    items->row = r;
  }
  auto image = [&](const ImageSize& size) { return model.Image(size.height, size.width); };
  // A grouped video's later groups cost what its first does: one sampling per video.
  Result<VideoCost> first_group = VideoCost{};
  auto video = [&](const VideoItem& v) {
    if (v.group == 0) first_group = model.Video(v);
    return first_group;
  };
  auto audio = [&](const AudioItem& a) { return model.Audio(a); };
  uint64_t image_tokens = 0, video_tokens = 0, audio_tokens = 0;
  SampleCost out;
  MMPT_RETURN_IF_ERROR(CostItems(table, model, row, "image", r.images, image,
                                 items ? &items->images : nullptr, &image_tokens,
                                 &out.vision_seconds));
  MMPT_RETURN_IF_ERROR(CostItems(table, model, row, "video", r.videos, video,
                                 items ? &items->videos : nullptr, &video_tokens,
                                 &out.vision_seconds));
  MMPT_RETURN_IF_ERROR(CostItems(table, model, row, "audio", r.audios, audio,
                                 items ? &items->audios : nullptr, &audio_tokens,
                                 &out.audio_seconds));
  if (image_tokens + video_tokens + audio_tokens > UINT32_MAX) {
    uint32_t s = table.SourceOfRow(row);
    return Status::InvalidArgument("source '{}' sample {}: {} media tokens overflow",
                                   table.source_names[s], row - table.source_begin[s],
                                   image_tokens + video_tokens + audio_tokens);
  }
  out.image_tokens = static_cast<uint32_t>(image_tokens);
  out.video_tokens = static_cast<uint32_t>(video_tokens);
  out.audio_tokens = static_cast<uint32_t>(audio_tokens);
  return out;
}

namespace {

// Cost rows [begin, end) into `out`; the first failing row's error, or OK.
Status CostRows(const SampleTable& table, const CostModel& model, uint64_t begin, uint64_t end,
                CostedSamples* out) {
  ItemCosts items;
  for (uint64_t row = begin; row < end; ++row) {
    MMPT_ASSIGN_OR_RETURN(SampleCost cost, CostSample(table, model, row, &items));
    std::copy(items.images.begin(), items.images.end(),
              out->images.begin() + static_cast<ptrdiff_t>(items.row.first_image));
    if (!out->video_tokens.empty()) {
      std::copy(items.videos.begin(), items.videos.end(),
                out->videos.begin() + static_cast<ptrdiff_t>(items.row.first_video));
      out->video_tokens[row] = cost.video_tokens;
    }
    if (!out->audio_tokens.empty()) {
      std::copy(items.audios.begin(), items.audios.end(),
                out->audios.begin() + static_cast<ptrdiff_t>(items.row.first_audio));
      out->audio_tokens[row] = cost.audio_tokens;
      out->audio_seconds[row] = cost.audio_seconds;
    }
    out->image_tokens[row] = cost.image_tokens;
    out->vision_seconds[row] = cost.vision_seconds;
  }
  return Status::OK();
}

}  // namespace

Result<CostedSamples> CostSamples(const SampleTable& table, const CostModel& model,
                                  ThreadPool* pool) {
  CostedSamples out;
  const size_t n = table.num_samples();
  out.image_tokens.assign(n, 0);
  out.vision_seconds.assign(n, 0.0);
  out.images.resize(table.num_images());
  if (table.num_videos() > 0) {
    out.video_tokens.assign(n, 0);
    out.videos.resize(table.num_videos());
  }
  if (table.num_audios() > 0) {
    out.audio_tokens.assign(n, 0);
    out.audio_seconds.assign(n, 0.0);
    out.audios.resize(table.num_audios());
  }
  if (pool == nullptr || pool->size() <= 1 || n < 4096) {
    MMPT_RETURN_IF_ERROR(CostRows(table, model, 0, n, &out));
    return out;
  }
  // Fixed chunks, each writing only its own rows: the result is the same for any thread count.
  constexpr uint64_t kChunk = 4096;
  const size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<Status> status(chunks);
  pool->ParallelFor(0, chunks, [&](size_t c) {
    status[c] = CostRows(table, model, c * kChunk, std::min<uint64_t>(n, (c + 1) * kChunk), &out);
  });
  for (const Status& s : status) MMPT_RETURN_IF_ERROR(s);
  return out;
}

}  // namespace mmpt::cost
