#include "mmpt/load/dataset_source.h"

#include <zlib.h>

#include <algorithm>

#include <fmt/format.h>

#include "mmpt/cost/presets.h"
#include "mmpt/media/image_probe.h"

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

}  // namespace

Result<std::shared_ptr<DatasetSource>> DatasetSource::Open(const std::string& dir,
                                                           DatasetSourceOptions options) {
  MMPT_ASSIGN_OR_RETURN(store::Dataset dataset, store::Dataset::Open(dir));
  return Create(std::make_shared<const store::Dataset>(std::move(dataset)), std::move(options));
}

Result<std::shared_ptr<DatasetSource>> DatasetSource::Create(
    std::shared_ptr<const store::Dataset> dataset, DatasetSourceOptions options) {
  std::shared_ptr<DatasetSource> source(new DatasetSource());
  const std::string& preset = dataset->manifest().vision_preset;
  if (options.resize_from_manifest && !preset.empty()) {
    MMPT_ASSIGN_OR_RETURN(cost::VisionConfig vision, cost::LoadVisionPreset(preset));
    if (vision.rule != cost::ResolutionRule::kSmartResize) {
      return Status::InvalidArgument(
          "{}: vision preset '{}' does not use smart_resize; the loader preprocesses images "
          "for Qwen-VL encoders only",
          dataset->dir(), preset);
    }
    options.preprocess.resize.factor = vision.patch_size * vision.spatial_merge;
    options.preprocess.resize.min_pixels = vision.min_pixels;
    options.preprocess.resize.max_pixels = vision.max_pixels;
    options.preprocess.patch.patch_size = vision.patch_size;
    options.preprocess.patch.merge_size = vision.spatial_merge;
    options.preprocess.patch.temporal_patch_size = vision.temporal_patch;
  }
  source->dataset_ = std::move(dataset);
  source->options_ = std::move(options);
  return source;
}

Result<RenderedSample> DatasetSource::Render(const plan::StepPlan& plan,
                                             const plan::PlannedSequence& sequence) const {
  MMPT_ASSIGN_OR_RETURN(uint64_t global, dataset_->GlobalIndex(sequence.source, sequence.index));
  const std::string name =
      fmt::format("sample {} of source '{}' (dataset index {})", sequence.index,
                  dataset_->sources()[sequence.source], global);
  auto context = [&](const Status& s) { return s.WithContext(name); };

  store::SampleView parsed;
  if (Status read = dataset_->ReadSample(global, parsed); !read.ok()) return context(read);
  Result<std::span<const int32_t>> ids = dataset_->Tokens(global);
  if (!ids.ok()) return context(ids.status());
  std::span<const store::MediaMeta> media = dataset_->media_meta(global);

  // Planned images by their index within the sample.
  std::span<const plan::PlannedImage> planned = plan.Images(sequence);
  std::vector<const plan::PlannedImage*> planned_of(parsed.media.size(), nullptr);
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
  uint64_t id_offset = 0;
  uint64_t text_left = sequence.text_tokens;
  for (const store::SegmentView& segment : parsed.segments) {
    if (!segment.is_media) {
      if (segment.text_tokens < 0 || id_offset + segment.text_tokens > ids->size()) {
        return Status::Corrupt("{}: segment token counts disagree with the {} stored ids", name,
                               ids->size());
      }
      const uint64_t take = std::min<uint64_t>(text_left, segment.text_tokens);
      const uint8_t loss = options_.loss == LossMode::kAllText || segment.role == "assistant";
      out.tokens.insert(out.tokens.end(), ids->begin() + id_offset,
                        ids->begin() + id_offset + take);
      out.has_loss.insert(out.has_loss.end(), take, loss);
      id_offset += segment.text_tokens;
      text_left -= take;
      continue;
    }
    const uint32_t k = segment.media_index;
    const plan::PlannedImage* image = k < planned_of.size() ? planned_of[k] : nullptr;
    if (image == nullptr) {
      return Status::Internal("{}: image {} is in the sample but not in the plan", name, k);
    }
    if (k >= media.size()) {
      return Status::Corrupt("{}: image {} has no .meta record ({} records)", name, k,
                             media.size());
    }
    Result<std::span<const std::byte>> bytes = dataset_->Media(global, k);
    if (!bytes.ok()) return context(bytes.status());
    if (bytes->empty()) {
      return Status::InvalidArgument("{}: image {} is metadata-only (no bytes to load)", name, k);
    }
    if (options_.verify_crc && Crc32(*bytes) != media[k].crc32) {
      return Status::Corrupt("{}: image {} fails its CRC-32 check ({:08x}, .meta says {:08x}): "
                             "the zip changed after prepare",
                             name, k, Crc32(*bytes), media[k].crc32);
    }
    Result<media::ImageInfo> info = media::ProbeImage(*bytes);
    if (!info.ok()) return context(info.status().WithContext(fmt::format("image {}", k)));
    Result<media::ResizedSize> size =
        media::PreprocessedSize(*info, options_.preprocess.resize);
    if (!size.ok()) return context(size.status().WithContext(fmt::format("image {}", k)));
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
          "{}: image {} resizes to {}x{} = {} tokens but the plan counted {} (plan made for "
          "another vision config?)",
          name, k, size->width, size->height, r.token_count, image->llm_tokens);
    }
    if (r.token_start != image->token_start) {
      return Status::Internal("{}: image {} renders at token {} but the plan put it at {} (plan "
                              "made from another dataset?)",
                              name, k, r.token_start, image->token_start);
    }
    out.tokens.insert(out.tokens.end(), r.token_count, options_.image_pad_token_id);
    out.has_loss.insert(out.has_loss.end(), r.token_count, 0);
    out.images.push_back(r);
  }
  if (out.tokens.size() != sequence.tokens) {
    return Status::Internal("{}: renders to {} tokens but the plan placed {} (plan made from "
                            "another dataset or tokenizer?)",
                            name, out.tokens.size(), sequence.tokens);
  }
  return out;
}

Status DatasetSource::FillPixels(const RenderedSample& sample, const RenderedImage& image,
                                 std::span<float> out) const {
  MMPT_ASSIGN_OR_RETURN(uint64_t global, dataset_->GlobalIndex(sample.source, sample.index));
  MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> bytes,
                        dataset_->Media(global, image.sample_image));
  MMPT_ASSIGN_OR_RETURN(media::GridThw grid,
                        media::PreprocessImageInto(bytes, options_.preprocess, out));
  if (grid.t != image.grid_t || grid.h != image.grid_h || grid.w != image.grid_w) {
    return Status::Internal("image decodes to grid {}x{}x{}, its header said {}x{}x{}", grid.t,
                            grid.h, grid.w, image.grid_t, image.grid_h, image.grid_w);
  }
  return Status::OK();
}

}  // namespace mmpt::load
