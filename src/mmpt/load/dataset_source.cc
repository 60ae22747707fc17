#include "mmpt/load/dataset_source.h"

#include <zlib.h>

#include <algorithm>

#include <fmt/format.h>

#include "mmpt/cost/presets.h"
#include "mmpt/cost/vision_model.h"
#include "mmpt/media/image_probe.h"
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
std::string SampleName(const store::Dataset& dataset, uint64_t global,
                       const store::SampleView& sample) {
  return fmt::format("{} (sample '{}')", dataset.Where(global), sample.key);
}

std::string MediaName(const store::SampleView& sample, uint32_t k) {
  if (k >= sample.media.size()) return fmt::format("image {}", k);
  const store::MediaView& media = sample.media[k];
  return fmt::format("{} {} ('{}')", store::MediaKindName(media.kind), k,
                     media.path.empty() ? media.entry : media.path);
}

}  // namespace

Result<std::shared_ptr<DatasetSource>> DatasetSource::Open(const std::string& dir,
                                                           DatasetSourceOptions options) {
  MMPT_ASSIGN_OR_RETURN(store::Dataset dataset, store::Dataset::Open(dir));
  return Create(std::make_shared<const store::Dataset>(std::move(dataset)), std::move(options));
}

Result<std::shared_ptr<DatasetSource>> DatasetSource::Create(
    std::shared_ptr<const store::Dataset> dataset, DatasetSourceOptions options) {
  std::shared_ptr<DatasetSource> source(new DatasetSource());
  const store::Manifest& manifest = dataset->manifest();
  MMPT_ASSIGN_OR_RETURN(cost::VisionConfig vision, cost::LoadVisionPreset(manifest.vision_preset));
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
  options.preprocess.decode.max_pixels = manifest.max_decode_pixels;

  MMPT_ASSIGN_OR_RETURN(source->tokenizer_path_,
                        text::FindTokenizer(options.tokenizer, manifest.tokenizer));
  MMPT_ASSIGN_OR_RETURN(source->tokenizer_, text::LoadTokenizer(source->tokenizer_path_));
  MMPT_ASSIGN_OR_RETURN(
      text::ChatTemplate chat,
      text::ChatTemplate::Parse(manifest.chat_template, dataset->dir() + "/mmpt.json: chat_template"));
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
  MMPT_RETURN_IF_ERROR(dataset_->ReadSample(global, parsed));
  samples_read_.fetch_add(1, std::memory_order_relaxed);
  if (Result<std::string_view> line = dataset_->Line(global); line.ok()) {
    bytes_read_.fetch_add(line->size(), std::memory_order_relaxed);
  }
  const std::string name = SampleName(*dataset_, global, parsed);
  auto context = [&](const Status& s) { return s.WithContext(name); };
  auto media_name = [&](uint32_t k) { return MediaName(parsed, k); };

  if (Status status = store::RenderSample(*renderer_, parsed, &rendered); !status.ok()) {
    return context(status);
  }
  Result<std::span<const int32_t>> stored = dataset_->Tokens(global);
  if (!stored.ok()) return context(stored.status());
  bytes_read_.fetch_add(stored->size_bytes(), std::memory_order_relaxed);
  if (!std::equal(rendered.ids.begin(), rendered.ids.end(), stored->begin(), stored->end())) {
    return Status::InvalidArgument(
        "{}: renders to other token ids than prepare stored ({} vs {} ids): tokenizer {} is not "
        "the one the dataset was prepared with ({})",
        name, rendered.ids.size(), stored->size(), tokenizer_path_, dataset_->manifest().tokenizer);
  }
  std::span<const store::MediaMeta> media = dataset_->media_meta(global);
  for (uint32_t k = 0; k < media.size(); ++k) {
    if (media[k].kind != store::MediaKind::kImage) {
      return Status::InvalidArgument(
          "{}: {} is not loaded: video and audio are prepared, inspected and planned, but the "
          "loader does not put them into batches yet",
          name, media_name(k));
    }
  }
  if (rendered.image_positions.size() != media.size()) {
    return Status::Corrupt("{}: renders {} images where .meta has {}", name,
                           rendered.image_positions.size(), media.size());
  }

  // Planned images by their index within the sample.
  std::span<const plan::PlannedImage> planned = plan.Images(sequence);
  std::vector<const plan::PlannedImage*> planned_of(media.size(), nullptr);
  for (const plan::PlannedImage& image : planned) {
    if (image.sample_image >= planned_of.size()) {
      return Status::Internal("{}: the plan names image {} but the sample has {}", name,
                              image.sample_image, planned_of.size());
    }
    planned_of[image.sample_image] = &image;
  }

  RenderedSample out;
  out.source = sequence.source;
  out.index = sequence.index;
  out.tokens.reserve(sequence.tokens);
  out.has_loss.reserve(sequence.tokens);
  // The plan keeps the first text_tokens ids (it truncates from the end); an image past the
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
  for (uint32_t k = 0; k < media.size(); ++k) {
    const plan::PlannedImage* image = planned_of[k];
    if (image == nullptr) {
      return Status::Internal("{}: {} is in the sample but not in the plan", name, media_name(k));
    }
    copy_text(std::max(cursor, std::min<size_t>(rendered.image_positions[k], kept)));
    Result<std::span<const std::byte>> bytes = dataset_->Media(global, k);
    if (!bytes.ok()) return context(bytes.status().WithContext(media_name(k)));
    if (bytes->empty()) {
      return Status::InvalidArgument("{}: {} is metadata-only (no bytes to load)", name,
                                     media_name(k));
    }
    if (options_.verify_crc) bytes_read_.fetch_add(bytes->size(), std::memory_order_relaxed);
    if (options_.verify_crc && Crc32(*bytes) != media[k].crc32) {
      return Status::Corrupt("{}: {} fails its CRC-32 check ({:08x}, .meta says {:08x}): "
                             "the zip changed after prepare",
                             name, media_name(k), Crc32(*bytes), media[k].crc32);
    }
    Result<media::ImageInfo> info = media::ProbeImage(*bytes);
    if (!info.ok()) return context(info.status().WithContext(media_name(k)));
    Result<media::ResizedSize> size =
        media::PreprocessedSize(*info, options_.preprocess.resize);
    if (!size.ok()) return context(size.status().WithContext(media_name(k)));
    const uint32_t patch = options_.preprocess.patch.patch_size;
    const uint32_t merge = options_.preprocess.patch.merge_size;
    RenderedImage r;
    r.token_start = static_cast<uint32_t>(out.tokens.size());
    r.grid_t = 1;
    r.grid_h = size->height / patch;
    r.grid_w = size->width / patch;
    r.token_count = r.grid_h * r.grid_w / (merge * merge);
    r.sample_image = k;
    if (r.token_count != image->llm_tokens) {
      return Status::Internal(
          "{}: {} resizes to {}x{} = {} tokens but the plan counted {} (plan made for "
          "another vision config?)",
          name, media_name(k), size->width, size->height, r.token_count, image->llm_tokens);
    }
    if (r.token_start != image->token_start) {
      return Status::Internal("{}: {} renders at token {} but the plan put it at {} (plan "
                              "made from another dataset?)",
                              name, media_name(k), r.token_start, image->token_start);
    }
    out.tokens.insert(out.tokens.end(), r.token_count, renderer_->image_pad_id());
    out.has_loss.insert(out.has_loss.end(), r.token_count, 0);
    out.images.push_back(r);
  }
  copy_text(std::max(cursor, kept));
  if (out.tokens.size() != sequence.tokens) {
    return Status::Internal("{}: renders to {} tokens but the plan placed {} (plan made from "
                            "another dataset?)",
                            name, out.tokens.size(), sequence.tokens);
  }
  return out;
}

Status DatasetSource::FillPixels(const RenderedSample& sample, const RenderedImage& image,
                                 std::span<float> out) const {
  MMPT_ASSIGN_OR_RETURN(uint64_t global, dataset_->GlobalIndex(sample.source, sample.index));
  MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> bytes,
                        dataset_->Media(global, image.sample_image));
  images_read_.fetch_add(1, std::memory_order_relaxed);
  bytes_read_.fetch_add(bytes.size(), std::memory_order_relaxed);
  Result<media::GridThw> grid = media::PreprocessImageInto(bytes, options_.preprocess, out);
  Status status = grid.status();
  if (grid.ok() && (grid->t != image.grid_t || grid->h != image.grid_h || grid->w != image.grid_w)) {
    status = Status::Internal("decodes to grid {}x{}x{}, its header said {}x{}x{}", grid->t,
                              grid->h, grid->w, image.grid_t, image.grid_h, image.grid_w);
  }
  if (status.ok()) return status;
  // Only now read what names the sample and the image.
  store::SampleView parsed;
  if (Status read = dataset_->ReadSample(global, parsed); !read.ok()) return read;
  return status.WithContext(MediaName(parsed, image.sample_image))
      .WithContext(SampleName(*dataset_, global, parsed));
}

}  // namespace mmpt::load
