#include "mmpt/cost/vision_model.h"

#include <algorithm>
#include <cmath>

namespace mmpt::cost {
namespace {

// Forward FLOPs of one encoder pass over `n` patches (one image or one tile).
double EncoderForwardFlops(const VisionConfig& c, double n, uint32_t llm_hidden) {
  const double h = c.hidden;
  double linear_per_layer = 2.0 * n * (4.0 * h * h) +  // qkv + output projection
                            2.0 * n * (c.gated_mlp ? 3.0 : 2.0) * h * c.mlp_hidden;
  double full_attention = 4.0 * n * n * h;  // QKᵀ and AV over all patches
  double window_patches = 0;
  if (c.window_size > 0) {
    double side = static_cast<double>(c.window_size) / c.patch_size;
    window_patches = std::min(n, side * side);
  }
  double windowed_attention = 4.0 * n * window_patches * h;
  const auto full_layers = static_cast<uint32_t>(c.full_attention_layers.size());
  uint32_t windowed_layers = c.layers - full_layers;
  double flops = c.layers * linear_per_layer + full_layers * full_attention +
                 windowed_layers * windowed_attention;
  // Patch embedding: a linear map of C × T × P × P pixels to `hidden`.
  flops += 2.0 * n * (3.0 * c.temporal_patch * c.patch_size * c.patch_size) * h;
  // Merger / projector: n / merge² tokens through merger_hidden → merger_hidden → llm_hidden;
  // each DeepStack merger (Qwen3-VL) is another one of the same shape.
  double merged = n / (static_cast<double>(c.spatial_merge) * c.spatial_merge);
  const double mergers = 1.0 + static_cast<double>(c.deepstack_layers.size());
  flops += mergers * 2.0 * merged * c.merger_hidden *
           (static_cast<double>(c.merger_hidden) + llm_hidden);
  return flops;
}

// Whether `indices` ascend strictly, each below `layers`.
bool LayerIndices(const std::vector<uint32_t>& indices, uint32_t layers) {
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] >= layers || (i > 0 && indices[i] <= indices[i - 1])) return false;
  }
  return true;
}

// InternVL's tile grid: the (cols, rows) with min ≤ cols·rows ≤ max whose aspect ratio is
// closest to the image's; on a tie the larger grid wins when the image has more than half its
// pixels.
void ChooseTileGrid(const VisionConfig& c, uint32_t width, uint32_t height, uint32_t* cols,
                    uint32_t* rows) {
  double aspect = static_cast<double>(width) / height;
  double best_diff = 1e300;
  *cols = 1;
  *rows = 1;
  // Grids in the reference's order: by tile count, then by cols, then rows.
  for (uint32_t n = c.min_tiles; n <= c.max_tiles; ++n) {
    for (uint32_t i = 1; i <= n; ++i) {
      if (n % i != 0) continue;
      uint32_t j = n / i;
      double diff = std::abs(aspect - static_cast<double>(i) / j);
      if (diff < best_diff) {
        best_diff = diff;
        *cols = i;
        *rows = j;
      } else if (diff == best_diff) {
        double area = static_cast<double>(width) * height;
        double tile_area = static_cast<double>(c.tile_size) * c.tile_size;
        if (area > 0.5 * tile_area * i * j) {
          *cols = i;
          *rows = j;
        }
      }
    }
  }
}

}  // namespace

Status VisionConfig::Validate() const {
  auto bad = [&](std::string_view field) {
    return Status::InvalidArgument("vision preset '{}': field '{}' is missing or invalid", name,
                                   field);
  };
  if (patch_size == 0) return bad("resolution.patch_size");
  if (spatial_merge == 0) return bad("resolution.spatial_merge");
  if (temporal_patch == 0) return bad("resolution.temporal_patch");
  if (hidden == 0) return bad("encoder.hidden");
  if (layers == 0) return bad("encoder.layers");
  if (heads == 0) return bad("encoder.heads");
  if (mlp_hidden == 0) return bad("encoder.mlp_hidden");
  if (!LayerIndices(full_attention_layers, layers)) return bad("encoder.full_attention_layers");
  if (full_attention_layers.size() < layers && window_size == 0) return bad("encoder.window_size");
  if (!norm.empty() && norm != "layer_norm" && norm != "rms_norm") return bad("encoder.norm");
  if (!activation.empty() && activation != "quick_gelu" && activation != "silu" &&
      activation != "gelu_pytorch_tanh") {
    return bad("encoder.activation");
  }
  if (position_side() * position_side() != position_embeddings) {
    return bad("encoder.position_embeddings");
  }
  if (!LayerIndices(deepstack_layers, layers)) return bad("encoder.deepstack_layers");
  if (!(norm_eps > 0)) return bad("encoder.norm_eps");
  if (!std::all_of(pixel_std.begin(), pixel_std.end(), [](float s) { return s > 0; })) {
    return bad("resolution.std");
  }
  if (!(rope_theta > 0)) return bad("encoder.rope_theta");
  if (!(tokens_per_second >= 0 && tokens_per_second < 1e6)) return bad("encoder.tokens_per_second");
  switch (rule) {
    case ResolutionRule::kSmartResize:
      if (max_pixels == 0 || min_pixels > max_pixels) return bad("resolution.max_pixels");
      if (video_budget == media::VideoBudget::kAllFrames &&
          (video_max_pixels == 0 || video_min_pixels > video_max_pixels)) {
        return bad("resolution.video.max_pixels");
      }
      break;
    case ResolutionRule::kFixed:
      if (image_size < patch_size) return bad("resolution.image_size");
      break;
    case ResolutionRule::kTiles:
      if (tile_size == 0 || tile_size % patch_size != 0) return bad("resolution.tile_size");
      if (min_tiles == 0 || min_tiles > max_tiles) return bad("resolution.max_tiles");
      if (tokens_per_tile == 0) return bad("resolution.tokens_per_tile");
      break;
  }
  return Status::OK();
}

uint32_t VisionConfig::position_side() const {
  return static_cast<uint32_t>(std::lround(std::sqrt(position_embeddings)));
}

Result<media::ResizeRule> ResizeRuleOf(const VisionConfig& c) {
  if (c.rule != ResolutionRule::kSmartResize) {
    return Status::InvalidArgument("vision preset '{}' does not resize by smart_resize", c.name);
  }
  media::ResizeRule rule;
  rule.factor = c.patch_size * c.spatial_merge;
  rule.min_pixels = c.min_pixels;
  rule.max_pixels = c.max_pixels;
  return rule;
}

Result<media::VideoSamplingRule> VideoRuleOf(const VisionConfig& c) {
  if (c.rule != ResolutionRule::kSmartResize || c.temporal_patch < 2) {
    return Status::InvalidArgument(
        "vision preset '{}' does not encode video (needs smart_resize "
        "and a temporal patch)",
        c.name);
  }
  media::VideoSamplingRule rule =
      media::VideoSamplingRule::ForFactor(c.patch_size * c.spatial_merge);
  rule.frame_factor = c.temporal_patch;
  rule.budget = c.video_budget;
  rule.resize = c.video_resize;
  rule.grid_seconds = c.video_grid_seconds;
  if (c.video_budget == media::VideoBudget::kAllFrames) {
    rule.min_pixels = c.video_min_pixels;
    rule.max_pixels = c.video_max_pixels;
  }
  return rule;
}

Result<VideoCost> CostVideo(const VisionConfig& c, uint32_t width, uint32_t height, uint32_t frames,
                            uint32_t fps_milli, uint32_t llm_hidden, uint32_t groups) {
  MMPT_ASSIGN_OR_RETURN(media::VideoSamplingRule rule, VideoRuleOf(c));
  auto sampling = media::SampleVideo(frames, fps_milli / 1000.0, height, width, rule);
  if (!sampling.ok()) {
    return sampling.status().WithContext(
        fmt::format("video {}x{}, {} frames at {} fps", width, height, frames, fps_milli / 1000.0));
  }
  VideoCost cost;
  cost.sampled_frames = static_cast<uint32_t>(sampling->frame_indices.size());
  cost.resized_width = sampling->size.width;
  cost.resized_height = sampling->size.height;
  cost.grid_t = cost.sampled_frames / c.temporal_patch;
  if (groups > 0) {
    if (groups != cost.grid_t) {
      return Status::InvalidArgument(
          "video {}x{}, {} frames at {} fps: {} temporal groups where the dataset has {} "
          "(prepared under another video rule?)",
          width, height, frames, fps_milli / 1000.0, cost.grid_t, groups);
    }
    cost.sampled_frames = c.temporal_patch;
    cost.grid_t = 1;
  }
  const uint32_t step_patches =
      (cost.resized_width / c.patch_size) * (cost.resized_height / c.patch_size);
  cost.patches = cost.grid_t * step_patches;
  cost.llm_tokens = cost.patches / (c.spatial_merge * c.spatial_merge);
  cost.train_flops = 3.0 * cost.grid_t * EncoderForwardFlops(c, step_patches, llm_hidden);
  cost.second_per_grid_t = static_cast<float>(sampling->SecondsPerGridStep(c.temporal_patch));
  return cost;
}

Result<ImageCost> ImageShape(const VisionConfig& c, uint32_t width, uint32_t height) {
  if (width == 0 || height == 0) {
    return Status::InvalidArgument("image size {}x{} has a zero side", width, height);
  }
  ImageCost shape;
  switch (c.rule) {
    case ResolutionRule::kSmartResize: {
      MMPT_ASSIGN_OR_RETURN(media::ResizeRule rule, ResizeRuleOf(c));
      MMPT_ASSIGN_OR_RETURN(media::ResizedSize size, media::SmartResize(height, width, rule));
      shape.resized_width = size.width;
      shape.resized_height = size.height;
      shape.patches = (size.width / c.patch_size) * (size.height / c.patch_size);
      shape.llm_tokens = shape.patches / (c.spatial_merge * c.spatial_merge);
      break;
    }
    case ResolutionRule::kFixed: {
      shape.resized_width = shape.resized_height = c.image_size;
      uint32_t side = c.image_size / c.patch_size;  // a strided conv drops the remainder
      shape.patches = side * side;
      shape.llm_tokens = shape.patches / (c.spatial_merge * c.spatial_merge);
      break;
    }
    case ResolutionRule::kTiles: {
      if (std::max(width, height) / std::min(width, height) > 200) {
        return Status::InvalidArgument("image size {}x{}: aspect ratio above 200", width, height);
      }
      uint32_t cols = 1, rows = 1;
      ChooseTileGrid(c, width, height, &cols, &rows);
      shape.tiles = cols * rows + ((c.thumbnail && cols * rows > 1) ? 1 : 0);
      shape.resized_width = cols * c.tile_size;
      shape.resized_height = rows * c.tile_size;
      const uint32_t side = c.tile_size / c.patch_size;
      shape.patches = side * side * shape.tiles;
      shape.llm_tokens = c.tokens_per_tile * shape.tiles;
      break;
    }
  }
  return shape;
}

Result<ImageCost> CostImage(const VisionConfig& c, uint32_t height, uint32_t width,
                            uint32_t llm_hidden) {
  MMPT_ASSIGN_OR_RETURN(ImageCost cost, ImageShape(c, width, height));
  // Each tile is its own encoder pass: attention never crosses tiles (one tile but for kTiles).
  const double tile_flops = EncoderForwardFlops(c, cost.patches / cost.tiles, llm_hidden);
  cost.train_flops = 3.0 * cost.tiles * tile_flops;
  return cost;
}

}  // namespace mmpt::cost
