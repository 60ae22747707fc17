#include "mmpt/load/dataset_source.h"

#include <zlib.h>

#include <algorithm>

#include <fmt/format.h>

#include "mmpt/cost/presets.h"
#include "mmpt/cost/vision_model.h"
#include "mmpt/media/audio.h"
#include "mmpt/media/image_probe.h"
#include "mmpt/media/video.h"
#include "mmpt/store/dataset_preset.h"
#include "mmpt/store/sample_render.h"

namespace mmpt::load {

std::string_view LossModeName(LossMode mode) {
  return mode == LossMode::kAllText ? "all" : "assistant";
}

Result<LossMode> ParseLossMode(std::string_view name) {
  if (name == "all") return LossMode::kAllText;
  if (name == "assistant") return LossMode::kAssistantOnly;
  return Status::InvalidArgument("unknown loss mode '{}' (expected all or assistant)", name);
}

namespace {

uint32_t Crc32(std::span<const std::byte> bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* data = reinterpret_cast<const Bytef*>(bytes.data());
  size_t left = bytes.size();
  while (left > 0) {  // zlib takes uInt lengths
    uInt chunk = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = crc32(crc, data, chunk);
    data += chunk;
    left -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

// How errors name a sample and its images: the shard line, the key, the media path.
std::string SampleName(const store::StoredSample& stored, const store::SampleView& sample) {
  return fmt::format("{} (sample '{}')", stored.Where(), sample.key);
}

// Names media record `k` of `records` (the sample's .meta records): its medium, and a grouped
// video's group.
std::string MediaName(const store::SampleView& sample, std::span<const store::MediaMeta> records,
                      uint32_t k) {
  const uint32_t medium = store::MediumOfRecord(records, k);
  if (medium >= sample.media.size()) return fmt::format("image {}", k);
  const store::MediaView& media = sample.media[medium];
  std::string name = fmt::format("{} {} ('{}')", store::MediaKindName(media.kind), medium,
                                 media.path.empty() ? media.entry : media.path);
  if (k < records.size() && records[k].groups > 0) {
    name += fmt::format(", group {} of {}", records[k].group, records[k].groups);
  }
  return name;
}

// What the plan placed of each media item of a sample, in the sample's media order.
struct Planned {
  const plan::PlannedImage* image = nullptr;
  const plan::PlannedVideo* video = nullptr;
  const plan::PlannedAudio* audio = nullptr;
};

// The plan numbers images, videos and audio clips apart (PlannedImage::sample_image,
// PlannedVideo::sample_video, PlannedAudio::sample_audio); map them to the sample's media
// order. Errors: Internal when the plan names an item the sample does not have.
Result<std::vector<Planned>> MatchPlan(const plan::StepPlan& plan,
                                       const plan::PlannedSequence& sequence,
                                       std::span<const store::MediaMeta> media) {
  std::vector<uint32_t> image_media, video_media, audio_media;
  for (uint32_t k = 0; k < media.size(); ++k) {
    switch (media[k].kind) {
      case store::MediaKind::kImage: image_media.push_back(k); break;
      case store::MediaKind::kVideo: video_media.push_back(k); break;
      case store::MediaKind::kAudio: audio_media.push_back(k); break;
    }
  }
  // A plan made from another dataset's planning table (an mmpt.plan that is not this one's)
  // names items the sample does not have, or sizes its .meta does not record.
  auto stale = [](std::string_view kind, uint32_t item, std::string_view planned,
                  std::string_view recorded) {
    return Status::Corrupt(
        "the plan's {} {} is {} where the shard's .meta records {}: the dataset's planning "
        "table (mmpt.plan) is not of these shards (`mmpt verify` checks it)",
        kind, item, planned, recorded);
  };
  auto size = [](uint32_t w, uint32_t h) { return fmt::format("{}x{}", w, h); };
  std::vector<Planned> planned_of(media.size());
  for (const plan::PlannedImage& image : plan.Images(sequence)) {
    if (image.sample_image >= image_media.size()) {
      return stale("image", image.sample_image, "in the plan", "no such image");
    }
    const store::MediaMeta& m = media[image_media[image.sample_image]];
    if (image.width != m.width || image.height != m.height) {
      return stale("image", image.sample_image, size(image.width, image.height),
                   size(m.width, m.height));
    }
    planned_of[image_media[image.sample_image]].image = &image;
  }
  for (const plan::PlannedVideo& video : plan.Videos(sequence)) {
    if (video.sample_video >= video_media.size()) {
      return stale("video", video.sample_video, "in the plan", "no such video");
    }
    const store::MediaMeta& m = media[video_media[video.sample_video]];
    if (video.width != m.width || video.height != m.height) {
      return stale("video", video.sample_video, size(video.width, video.height),
                   size(m.width, m.height));
    }
    planned_of[video_media[video.sample_video]].video = &video;
  }
  for (const plan::PlannedAudio& audio : plan.Audios(sequence)) {
    if (audio.sample_audio >= audio_media.size()) {
      return stale("audio clip", audio.sample_audio, "in the plan", "no such clip");
    }
    planned_of[audio_media[audio.sample_audio]].audio = &audio;
  }
  return planned_of;
}

// Per medium of a sample whose .meta records are `records`: its records when it is a video
// written with its sound track (text::ChatPiece::sound_items), else 0.
std::vector<uint32_t> SoundItems(std::span<const store::MediaMeta> records) {
  std::vector<uint32_t> items;  // records per medium
  std::vector<uint8_t> sound;   // the medium has sound track parts
  uint32_t medium = 0;
  for (uint32_t k = 0; k < records.size(); ++k) {
    medium += k > 0 && records[k].first_of_medium();
    items.resize(std::max<size_t>(items.size(), medium + 1), 0);
    sound.resize(items.size(), 0);
    ++items[medium];
    sound[medium] |= records[k].sound_track();
  }
  for (size_t m = 0; m < items.size(); ++m) items[m] *= sound[m];
  return items;
}

// That the loader rendered what prepare stored: the same ids (`stored`, through the tokenizer
// at `tokenizer_path` where prepare used `prepared_with`) and one position per media item.
Status CheckRendered(const text::RenderedText& rendered, std::span<const int32_t> stored,
                     size_t media, const std::string& name, const std::string& tokenizer_path,
                     const std::string& prepared_with) {
  if (!std::equal(rendered.ids.begin(), rendered.ids.end(), stored.begin(), stored.end())) {
    return Status::InvalidArgument(
        "{}: renders to other token ids than prepare stored ({} vs {} ids): tokenizer {} is not "
        "the one the dataset was prepared with ({})",
        name, rendered.ids.size(), stored.size(), tokenizer_path, prepared_with);
  }
  if (rendered.media_positions.size() != media) {
    return Status::Corrupt("{}: renders {} media items where .meta has {}", name,
                           rendered.media_positions.size(), media);
  }
  return Status::OK();
}

// The dataset's own shards.
class ShardBytes final : public StoredBytes {
 public:
  explicit ShardBytes(std::shared_ptr<const store::Dataset> dataset)
      : dataset_(std::move(dataset)) {}
  Result<std::string_view> Line(uint64_t global) const override {
    MMPT_ASSIGN_OR_RETURN(const store::StoredSample stored, dataset_->Sample(global));
    return stored.Line();
  }
  Result<std::span<const int32_t>> Tokens(uint64_t global) const override {
    MMPT_ASSIGN_OR_RETURN(const store::StoredSample stored, dataset_->Sample(global));
    return stored.Tokens();
  }
  Result<std::optional<std::span<const std::byte>>> Media(uint64_t global,
                                                          uint32_t k) const override {
    MMPT_ASSIGN_OR_RETURN(const store::StoredSample stored, dataset_->Sample(global));
    MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> bytes, stored.Media(k));
    return std::optional(bytes);
  }

 private:
  std::shared_ptr<const store::Dataset> dataset_;
};

}  // namespace

Result<std::shared_ptr<DatasetSource>> DatasetSource::Open(const std::string& dir,
                                                           DatasetSourceOptions options) {
  MMPT_ASSIGN_OR_RETURN(store::Dataset dataset, store::Dataset::Open(dir));
  return Create(std::make_shared<const store::Dataset>(std::move(dataset)), std::move(options));
}

Result<std::shared_ptr<DatasetSource>> DatasetSource::Create(
    std::shared_ptr<const store::Dataset> dataset, DatasetSourceOptions options,
    std::shared_ptr<const StoredBytes> bytes) {
  std::shared_ptr<DatasetSource> source(new DatasetSource());
  source->bytes_ = bytes != nullptr ? std::move(bytes) : std::make_shared<ShardBytes>(dataset);
  const store::Manifest& manifest = dataset->manifest();
  MMPT_ASSIGN_OR_RETURN(cost::VisionConfig vision, cost::LoadVisionPreset(manifest.vision));
  Result<media::ResizeRule> resize = cost::ResizeRuleOf(vision);
  if (!resize.ok()) {
    return resize.status().WithContext(
        fmt::format("{}: the loader preprocesses images for Qwen-VL (smart_resize) encoders only",
                    dataset->dir()));
  }
  options.preprocess.resize = *resize;
  options.preprocess.patch.patch_size = vision.patch_size;
  options.preprocess.patch.merge_size = vision.spatial_merge;
  options.preprocess.patch.temporal_patch_size = vision.temporal_patch;
  options.preprocess.patch.mean = vision.pixel_mean;
  options.preprocess.patch.std = vision.pixel_std;
  options.preprocess.decode.max_pixels = manifest.max_decode_pixels;
  // Videos: the sampling rule the plan costs them by, the images' patch geometry; a preset
  // that cannot encode video keeps the reason, for the first video.
  source->tokens_per_second_ = static_cast<float>(vision.tokens_per_second);
  if (Result<media::VideoSamplingRule> rule = cost::VideoRuleOf(vision); rule.ok()) {
    media::VideoPreprocessConfig video;
    video.sampling = *rule;
    video.patch = options.preprocess.patch;
    source->video_ = std::move(video);
  } else {
    source->video_ = rule.status();
  }

  // Audio: the dataset's audio preset gives the log-mel features and each clip's tokens.
  MMPT_ASSIGN_OR_RETURN(source->audio_,
                        cost::LoadAudioPreset(store::RecordedAudioPreset(manifest)));
  MMPT_ASSIGN_OR_RETURN(source->log_mel_,
                        media::LogMelExtractor::ForConfig(source->audio_.log_mel));
  if (manifest.audio_in_video) {
    MMPT_ASSIGN_OR_RETURN(source->sound_rule_,
                          cost::AudioInVideoRuleOf(source->audio_, vision.tokens_per_second));
  }

  MMPT_ASSIGN_OR_RETURN(source->tokenizer_path_,
                        text::FindTokenizer(options.tokenizer, manifest.tokenizer));
  MMPT_ASSIGN_OR_RETURN(source->tokenizer_, text::LoadTokenizer(source->tokenizer_path_));
  MMPT_ASSIGN_OR_RETURN(text::ChatTemplate chat,
                        text::ChatTemplate::Parse(manifest.chat_template,
                                                  dataset->dir() + "/mmpt.json: chat_template"));
  MMPT_ASSIGN_OR_RETURN(text::ChatRenderer renderer,
                        text::ChatRenderer::Create(std::move(chat), *source->tokenizer_));
  source->renderer_ = std::make_unique<text::ChatRenderer>(std::move(renderer));
  source->dataset_ = std::move(dataset);
  source->options_ = std::move(options);
  return source;
}

Result<RenderedSample> DatasetSource::Render(const plan::StepPlan& plan,
                                             const plan::PlannedSequence& sequence) const {
  MMPT_ASSIGN_OR_RETURN(uint64_t global, dataset_->GlobalIndex(sequence.source, sequence.index));
  thread_local store::SampleView parsed;
  thread_local text::RenderedText rendered;
  // Held through the render: the views the local shard gives stay valid (StoredBytes).
  MMPT_ASSIGN_OR_RETURN(const store::StoredSample held, dataset_->Sample(global));
  MMPT_ASSIGN_OR_RETURN(std::string_view line, bytes_->Line(global));
  MMPT_RETURN_IF_ERROR(held.Parse(line, parsed));
  samples_read_.fetch_add(1, std::memory_order_relaxed);
  bytes_read_.fetch_add(line.size(), std::memory_order_relaxed);
  const std::string name = SampleName(held, parsed);
  auto context = [&](const Status& s) { return s.WithContext(name); };
  std::span<const store::MediaMeta> media = held.media();
  auto media_name = [&](uint32_t k) { return MediaName(parsed, media, k); };

  const std::vector<uint32_t> sound_items =
      sound_rule_ ? SoundItems(media) : std::vector<uint32_t>();
  if (Status status = store::RenderSample(
          *renderer_, parsed, video_.ok() ? &video_->sampling : nullptr, &rendered, sound_items);
      !status.ok()) {
    return context(status);
  }
  Result<std::span<const int32_t>> stored = bytes_->Tokens(global);
  if (!stored.ok()) return context(stored.status());
  bytes_read_.fetch_add(stored->size_bytes(), std::memory_order_relaxed);
  MMPT_RETURN_IF_ERROR(CheckRendered(rendered, *stored, media.size(), name, tokenizer_path_,
                                     dataset_->manifest().tokenizer));
  Result<std::vector<Planned>> matched = MatchPlan(plan, sequence, media);
  if (!matched.ok()) return context(matched.status());
  const std::vector<Planned>& planned_of = *matched;

  RenderedSample out;
  out.source = sequence.source;
  out.index = sequence.index;
  out.tokens.reserve(sequence.tokens);
  out.has_loss.reserve(sequence.tokens);
  // The plan keeps the first text_tokens ids (it truncates from the end); an item past the
  // cut goes at the end of what is kept, as the planner placed it.
  const size_t kept = std::min<size_t>(sequence.text_tokens, rendered.ids.size());
  size_t cursor = 0;
  auto copy_text = [&](size_t end) {
    out.tokens.insert(out.tokens.end(), rendered.ids.begin() + cursor, rendered.ids.begin() + end);
    if (options_.loss == LossMode::kAllText) {
      out.has_loss.insert(out.has_loss.end(), end - cursor, 1);
    } else {
      out.has_loss.insert(out.has_loss.end(), rendered.target.begin() + cursor,
                          rendered.target.begin() + end);
    }
    cursor = end;
  };
  Result<std::optional<std::span<const std::byte>>> bytes{std::nullopt};
  uint32_t medium = 0;  // the sample's medium (Sample::media) of record k
  for (uint32_t k = 0; k < media.size(); ++k) {
    medium += k > 0 && media[k].first_of_medium();
    const Planned& planned = planned_of[k];
    if (planned.image == nullptr && planned.video == nullptr && planned.audio == nullptr) {
      return Status::Internal("{}: {} is in the sample but not in the plan", name, media_name(k));
    }
    copy_text(std::max(cursor, std::min<size_t>(rendered.media_positions[k], kept)));
    if (media[k].first_of_medium()) {  // a grouped video's later groups share its bytes
      bytes = CheckedMedia(global, k, media[k]);
      if (!bytes.ok()) return context(bytes.status().WithContext(media_name(k)));
    }
    if (planned.audio != nullptr) {
      if (Status s = AppendAudio(*planned.audio, media[k], k, out); !s.ok()) {
        return context(s.WithContext(media_name(k)));
      }
      continue;
    }
    Result<RenderedVisual> visual = RenderVisual(*bytes, planned.image, planned.video);
    if (!visual.ok()) return context(visual.status().WithContext(media_name(k)));
    RenderedVisual& r = *visual;
    r.token_start = static_cast<uint32_t>(out.tokens.size());
    r.sample_image = k;
    r.group = media[k].group;
    r.groups = media[k].groups;
    if (r.video) {
      const store::MediaView& ref = parsed.media[medium];
      r.clip_start_ms = ref.start_ms;
      r.clip_end_ms = ref.end_ms;
    }
    const uint32_t planned_start =
        planned.image != nullptr ? planned.image->token_start : planned.video->token_start;
    if (Status s = AppendPads(r.video ? text::PieceKind::kVideo : text::PieceKind::kImage,
                              r.token_count, planned_start, out);
        !s.ok()) {
      return context(s.WithContext(media_name(k)));
    }
    out.visuals.push_back(r);
    if (r.video && medium < sound_items.size() && sound_items[medium] > 0) {
      JoinSoundTrack(media[k], 0, out);
    }
  }
  copy_text(std::max(cursor, kept));
  if (out.tokens.size() != sequence.tokens) {
    return Status::Internal(
        "{}: renders to {} tokens but the plan placed {} (plan made from "
        "another dataset?)",
        name, out.tokens.size(), sequence.tokens);
  }
  return out;
}

Status DatasetSource::AppendPads(text::PieceKind kind, uint32_t count, uint32_t planned_start,
                                 RenderedSample& out) const {
  if (out.tokens.size() != planned_start) {
    return Status::Internal(
        "renders at token {} but the plan put it at {} (plan made from another dataset?)",
        out.tokens.size(), planned_start);
  }
  out.tokens.insert(out.tokens.end(), count, renderer_->pad_id(kind));
  out.has_loss.insert(out.has_loss.end(), count, 0);
  return Status::OK();
}

Status DatasetSource::AppendAudio(const plan::PlannedAudio& planned, const store::MediaMeta& record,
                                  uint32_t k, RenderedSample& out) const {
  // The plan decided the clip's samples, frames and tokens (cost::CostAudio), and which parts
  // of a sound track the encoder takes as one clip.
  if (planned.joins_previous && (out.audios.empty() || !record.sound_track())) {
    return Status::Internal("joins no sound track part before it");
  }
  const auto start = static_cast<uint32_t>(out.tokens.size());
  MMPT_RETURN_IF_ERROR(
      AppendPads(text::PieceKind::kAudio, planned.llm_tokens, planned.token_start, out));
  if (planned.joins_previous) {
    RenderedAudio& clip = out.audios.back();
    clip.more_runs.push_back({start, planned.llm_tokens});
    clip.valid_frames += planned.valid_frames;
    clip.samples += planned.samples;
  } else {
    out.audios.push_back({start, planned.llm_tokens, planned.valid_frames, planned.samples, k});
    out.audios.back().track_offset = planned.track_offset;
  }
  if (record.sound_track()) JoinSoundTrack(record, planned.llm_tokens, out);
  return Status::OK();
}

void DatasetSource::JoinSoundTrack(const store::MediaMeta& record, uint32_t tokens,
                                   RenderedSample& out) const {
  const uint32_t merge = options_.preprocess.patch.merge_size;
  if (record.sound_track()) {
    RenderedAudio& clip = out.audios.back();
    clip.parts = record.groups;
    clip.part = record.group;
    out.sound_tracks.back().item.audio_tokens += tokens;
    return;
  }
  const RenderedVisual& group = out.visuals.back();
  if (record.first_of_medium()) {
    // Its two start markers (the video's and the audio's) come just before.
    out.sound_tracks.push_back({group.token_start - 2, *sound_rule_, {}});
  }
  media::AudioInVideo& item = out.sound_tracks.back().item;
  ++item.grid_t;
  item.grid_h = group.grid_h / merge;
  item.grid_w = group.grid_w / merge;
  item.second_per_grid_t = group.second_per_grid_t;
}

Result<std::optional<std::span<const std::byte>>> DatasetSource::CheckedMedia(
    uint64_t global, uint32_t k, const store::MediaMeta& meta) const {
  MMPT_ASSIGN_OR_RETURN(std::optional<std::span<const std::byte>> bytes, bytes_->Media(global, k));
  if (!bytes) return bytes;  // checked by the peer that holds it
  if (bytes->empty()) return Status::InvalidArgument("metadata-only (no bytes to load)");
  if (options_.verify_crc) {
    bytes_read_.fetch_add(bytes->size(), std::memory_order_relaxed);
    if (Crc32(*bytes) != meta.crc32) {
      return Status::Corrupt(
          "fails its CRC-32 check ({:08x}, .meta says {:08x}): the zip "
          "changed after prepare",
          Crc32(*bytes), meta.crc32);
    }
  }
  return bytes;
}

Result<RenderedVisual> DatasetSource::RenderVisual(std::optional<std::span<const std::byte>> bytes,
                                                   const plan::PlannedImage* image,
                                                   const plan::PlannedVideo* video) const {
  const uint32_t patch = options_.preprocess.patch.patch_size;
  const uint32_t merge = options_.preprocess.patch.merge_size;
  RenderedVisual r;
  if (image != nullptr) {
    // An image whose bytes are elsewhere was probed by their holder against the same plan.
    media::ResizedSize size{image->resized_height, image->resized_width};
    if (bytes) {
      MMPT_ASSIGN_OR_RETURN(media::ImageInfo info, media::ProbeImage(*bytes));
      MMPT_ASSIGN_OR_RETURN(size, media::PreprocessedSize(info, options_.preprocess.resize));
    }
    r.grid_t = 1;
    r.grid_h = size.height / patch;
    r.grid_w = size.width / patch;
  } else {
    // The plan decided the sampling (frames, frame size, seconds per grid step:
    // media::SampleVideo through cost::CostVideo).
    MMPT_RETURN_IF_ERROR(video_.status());
    r.video = true;
    r.grid_t = video->frames / options_.preprocess.patch.temporal_patch_size;
    r.grid_h = video->resized_height / patch;
    r.grid_w = video->resized_width / patch;
    r.second_per_grid_t = video->second_per_grid_t;
  }
  r.token_count = r.grid_t * r.grid_h * r.grid_w / (merge * merge);
  const uint32_t planned = image != nullptr ? image->llm_tokens : video->llm_tokens;
  if (r.token_count != planned) {
    return Status::Internal(
        "resizes to {}x{}x{} patches = {} tokens but the plan counted {} "
        "(plan made for another vision config?)",
        r.grid_t, r.grid_h, r.grid_w, r.token_count, planned);
  }
  return r;
}

Result<media::GridThw> DatasetSource::PreprocessVideoInto(const RenderedSample& sample,
                                                          const RenderedVisual& item,
                                                          std::span<float> out,
                                                          store::StoredSample& held) const {
  MMPT_ASSIGN_OR_RETURN(const uint64_t global, dataset_->GlobalIndex(sample.source, sample.index));
  MMPT_ASSIGN_OR_RETURN(held, dataset_->Sample(global));
  if (!video_.ok()) return video_.status();
  // A grouped video's groups come one after another (assemble fills a rank's items in order):
  // the video is decoded once, for its first group here, and each group copies its rows.
  struct Decoded {
    const DatasetSource* source = nullptr;
    uint64_t global = 0;
    uint32_t first_record = 0;
    media::PreprocessedVideo video;
  };
  thread_local Decoded last;
  const uint32_t first_record = store::FirstRecordOfMedium(held.media(), item.sample_image);
  const bool cached = item.groups > 0 && last.source == this && last.global == global &&
                      last.first_record == first_record;
  if (!cached) {  // the video's bytes are read (and counted) once
    last = {};
    MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> bytes, ReadMedia(sample, first_record, held));
    media::VideoPreprocessConfig config = *video_;
    config.clip = {item.clip_start_ms, item.clip_end_ms};
    MMPT_ASSIGN_OR_RETURN(last.video, media::PreprocessVideo(bytes, config));
    last.source = this;
    last.global = global;
    last.first_record = first_record;
  }
  const media::PreprocessedVideo& video = last.video;
  media::GridThw grid = video.grid;
  size_t begin = 0, size = video.pixel_values.size();
  if (item.groups > 0) {  // the group's temporal step: patchify lays the steps out one by one
    if (grid.t != item.groups) {
      return Status::Internal("samples {} temporal groups where the plan has {}", grid.t,
                              item.groups);
    }
    size /= grid.t;
    begin = size * item.group;
    grid.t = 1;
  }
  if (size != out.size()) {
    return Status::Internal("decodes to {} floats where {} were planned", size, out.size());
  }
  std::copy_n(video.pixel_values.begin() + begin, size, out.begin());
  if (item.groups == 0 || item.group + 1 == item.groups) last = {};  // done with the video
  return grid;
}

Result<std::span<const std::byte>> DatasetSource::ReadMedia(const RenderedSample& sample,
                                                            uint32_t k,
                                                            store::StoredSample& held) const {
  MMPT_ASSIGN_OR_RETURN(const uint64_t global, dataset_->GlobalIndex(sample.source, sample.index));
  MMPT_ASSIGN_OR_RETURN(held, dataset_->Sample(global));
  MMPT_ASSIGN_OR_RETURN(std::optional<std::span<const std::byte>> here, bytes_->Media(global, k));
  if (!here) {
    return Status::Internal(
        "media item {} of sample {} is not here: its holder sent it to the CP rank that encodes it",
        k, global);
  }
  const std::span<const std::byte> bytes = *here;
  media_read_.fetch_add(1, std::memory_order_relaxed);
  bytes_read_.fetch_add(bytes.size(), std::memory_order_relaxed);
  return bytes;
}

Status DatasetSource::FillPixels(const RenderedSample& sample, const RenderedVisual& image,
                                 std::span<float> out) const {
  store::StoredSample held;
  auto image_into = [&]() -> Result<media::GridThw> {
    MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> bytes,
                          ReadMedia(sample, image.sample_image, held));
    return media::PreprocessImageInto(bytes, options_.preprocess, out);
  };
  Result<media::GridThw> grid =
      image.video ? PreprocessVideoInto(sample, image, out, held) : image_into();
  Status status = grid.status();
  if (grid.ok() &&
      (grid->t != image.grid_t || grid->h != image.grid_h || grid->w != image.grid_w)) {
    status = Status::Internal("decodes to grid {}x{}x{}, its header said {}x{}x{}", grid->t,
                              grid->h, grid->w, image.grid_t, image.grid_h, image.grid_w);
  }
  return NameError(sample, image.sample_image, std::move(status));
}

Status DatasetSource::NameError(const RenderedSample& sample, uint32_t k, Status status) const {
  if (status.ok()) return status;
  // Only now read what names the sample and the item.
  MMPT_ASSIGN_OR_RETURN(const uint64_t global, dataset_->GlobalIndex(sample.source, sample.index));
  MMPT_ASSIGN_OR_RETURN(const store::StoredSample stored, dataset_->Sample(global));
  store::SampleView parsed;
  Result<std::string_view> line = bytes_->Line(global);
  if (!line.ok()) return line.status();
  if (Status read = stored.Parse(*line, parsed); !read.ok()) return read;
  return status.WithContext(MediaName(parsed, stored.media(), k))
      .WithContext(SampleName(stored, parsed));
}

AudioFeatureShape DatasetSource::audio_features() const {
  const media::LogMelConfig& m = audio_.log_mel;
  return {m.n_mels, m.padding == media::ClipPadding::kWindow ? m.Frames() : 0};
}

Status DatasetSource::FillAudio(const RenderedSample& sample, const RenderedAudio& audio,
                                uint32_t frames, std::span<float> features,
                                std::span<int32_t> mask) const {
  const media::LogMelConfig& config = log_mel_->config();
  const uint32_t window = config.Frames();
  if (frames < audio.valid_frames || frames > window ||
      features.size() != size_t{config.n_mels} * frames || mask.size() != frames) {
    return Status::Internal(
        "audio features of {} frames into {} floats and {} mask entries "
        "({} mel bins, {} frames in the clip, {} in the window)",
        frames, features.size(), mask.size(), config.n_mels, audio.valid_frames, window);
  }
  if (audio.parts > 0) return FillSoundTrackPart(sample, audio, frames, features, mask);
  store::StoredSample held;
  MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> bytes,
                        ReadMedia(sample, audio.sample_audio, held));
  Status status = [&]() -> Status {
    MMPT_ASSIGN_OR_RETURN(media::DecodedAudio decoded,
                          media::DecodeAudio(bytes, config.sample_rate));
    if (decoded.samples.size() != audio.samples) {
      return Status::Corrupt(
          "decodes to {} samples at {} Hz where prepare recorded {} (the plan's length): the "
          "file changed, or the dataset was prepared before mmpt recorded decoded lengths "
          "(prepare it again)",
          decoded.samples.size(), config.sample_rate, audio.samples);
    }
    // Only the frames the batch keeps, equal to the whole window's (the reference's padding
    // and floor included).
    MMPT_ASSIGN_OR_RETURN(uint32_t valid, log_mel_->ExtractInto(decoded.samples, features, mask));
    if (valid != audio.valid_frames) {
      return Status::Internal("gives {} mel frames where the plan counted {}", valid,
                              audio.valid_frames);
    }
    return Status::OK();
  }();
  return NameError(sample, audio.sample_audio, std::move(status));
}

Status DatasetSource::FillSoundTrackPart(const RenderedSample& sample, const RenderedAudio& audio,
                                         uint32_t frames, std::span<float> features,
                                         std::span<int32_t> mask) const {
  MMPT_ASSIGN_OR_RETURN(const uint64_t global, dataset_->GlobalIndex(sample.source, sample.index));
  MMPT_ASSIGN_OR_RETURN(const store::StoredSample stored, dataset_->Sample(global));
  const uint32_t record = store::FirstRecordOfMedium(stored.media(), audio.sample_audio);
  const media::LogMelConfig& config = log_mel_->config();
  // A track's clips (its parts, one attention window each) come one after another (assemble
  // fills a rank's clips in order): its features, the whole track's (their floor is its
  // maximum − 8), are computed once, for the first clip that comes, over its valid frames, and
  // each clip copies its own.
  struct Track {
    const DatasetSource* source = nullptr;
    uint64_t global = 0;
    uint32_t record = 0;
    uint64_t samples = 0;
    uint32_t frames = 0;
    std::vector<float> features;  // n_mels × frames
  };
  thread_local Track last;
  Status status = [&]() -> Status {
    if (last.source != this || last.global != global || last.record != record) {
      last = {};
      store::StoredSample held;
      MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> bytes, ReadMedia(sample, record, held));
      MMPT_ASSIGN_OR_RETURN(media::DecodedAudio track,
                            media::DecodeAudio(bytes, config.sample_rate));
      const uint32_t whole = std::max(1u, media::ValidFrames(config, track.samples.size()));
      std::vector<int32_t> whole_mask(whole);
      last.features.resize(size_t{config.n_mels} * whole);
      MMPT_RETURN_IF_ERROR(
          log_mel_->ExtractInto(track.samples, last.features, whole_mask).status());
      last = {this, global, record, track.samples.size(), whole, std::move(last.features)};
    }
    const uint64_t end = uint64_t{audio.track_offset} + audio.samples;
    const bool final_part = audio.part + 1 == audio.parts;
    if (final_part ? last.samples != end : last.samples < end) {
      return Status::Corrupt(
          "its sound track decodes to {} samples at {} Hz where prepare recorded part {} of {} "
          "ending at sample {}: the file changed",
          last.samples, config.sample_rate, audio.part, audio.parts, end);
    }
    const uint32_t first = audio.track_offset / config.hop;
    if (first + audio.valid_frames > last.frames) {
      return Status::Internal("sound track part {} of {}: frames [{}, +{}) past the track's {}",
                              audio.part, audio.parts, first, audio.valid_frames, last.frames);
    }
    // Frames past the part's are masked: the track's next ones, or 0 past its end.
    for (uint32_t m = 0; m < config.n_mels; ++m) {
      for (uint32_t f = 0; f < frames; ++f) {
        features[size_t{m} * frames + f] =
            first + f < last.frames ? last.features[size_t{m} * last.frames + first + f] : 0.0f;
      }
    }
    for (uint32_t f = 0; f < frames; ++f) mask[f] = f < audio.valid_frames ? 1 : 0;
    if (final_part) last = {};  // done with the track
    return Status::OK();
  }();
  if (!status.ok()) last = {};
  return NameError(sample, audio.sample_audio, std::move(status));
}

}  // namespace mmpt::load
