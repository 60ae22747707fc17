#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/media/patchify.h"
#include "mmpt/media/smart_resize.h"
#include "mmpt/media/video.h"

namespace mmpt::cost {

/// How a vision encoder turns an image of any size into its input.
enum class ResolutionRule : uint8_t {
  kSmartResize,  // Qwen-VL dynamic resolution: both sides to multiples of patch × merge
  kFixed,        // resize to image_size × image_size (SigLIP)
  kTiles,        // InternVL dynamic tiling: a grid of tile_size tiles (+ a thumbnail)
};

/// A vision encoder and its resolution rule (a preset under presets/vision/).
struct VisionConfig {
  std::string name;
  ResolutionRule rule = ResolutionRule::kSmartResize;
  uint32_t patch_size = 14;     // pixels per patch side
  uint32_t spatial_merge = 1;   // patches merged per side into one LLM token (kSmartResize)
  uint32_t temporal_patch = 1;  // frames per patch (Qwen-VL: 2; a still image is repeated)
  uint64_t min_pixels = 0;      // kSmartResize bounds on the resized area
  uint64_t max_pixels = 0;
  uint32_t image_size = 0;  // kFixed: the side every image is resized to
  uint32_t tile_size = 0;   // kTiles: tile side in pixels
  uint32_t min_tiles = 1;   // kTiles: bounds on the tile grid's i × j
  uint32_t max_tiles = 1;
  bool thumbnail = false;        // kTiles: add a whole-image tile when the grid has > 1 tile
  uint32_t tokens_per_tile = 0;  // kTiles: LLM tokens per tile after pixel shuffle
  /// How a video's frame size is bounded (kSmartResize, "video" in "resolution"): per frame as
  /// qwen-vl-utils does (the default; its budgets scale with the factor), or all frames
  /// together as Hugging Face's Qwen3-VL video processor does, within these bounds (its
  /// size.shortest_edge and size.longest_edge).
  media::VideoBudget video_budget = media::VideoBudget::kPerFrame;
  uint64_t video_min_pixels = 0;  // kAllFrames
  uint64_t video_max_pixels = 0;
  /// How sampled frames are resized ("resize" in "video": "torchvision" or "pillow"; absent:
  /// media::VideoSamplingRule's, torchvision's as both video references do).
  media::BicubicRule video_resize = media::VideoSamplingRule{}.resize;
  /// Where a video's seconds per grid step come from ("grid_seconds" in "video": "sampled_fps",
  /// the default, or "fps", the Omni processors' temporal_patch_size / 2.0).
  media::GridSeconds video_grid_seconds = media::VideoSamplingRule{}.grid_seconds;
  /// The per-channel mean and std pixels are normalized with ("mean", "std" in "resolution";
  /// absent: media::PatchConfig's, CLIP's as Qwen2-VL and Qwen2.5-VL use; Qwen3-VL: 0.5).
  std::array<float, 3> pixel_mean = media::PatchConfig{}.mean;
  std::array<float, 3> pixel_std = media::PatchConfig{}.std;

  uint32_t hidden = 0;  // encoder width
  uint32_t layers = 0;
  uint32_t heads = 0;
  uint32_t mlp_hidden = 0;
  bool gated_mlp = false;                       // SwiGLU (3 matrices) instead of a 2-matrix MLP
  std::vector<uint32_t> full_attention_layers;  // indices of full-attention layers, ascending;
                                                // the rest attend within windows
  uint32_t window_size = 0;    // window side in pixels for windowed layers (0: none)
  uint32_t merger_hidden = 0;  // input width of the merger / projector into the LLM
  // The block's parts, as the native encoder (vision/) builds them; empty where a preset only
  // costs the encoder ("norm": "layer_norm" | "rms_norm", "activation": "quick_gelu" | "silu" |
  // "gelu_pytorch_tanh").
  std::string norm;
  std::string activation;
  double norm_eps = 1e-6;
  double rope_theta = 10000;  // base of the 2-D rotary position embedding
  bool patch_bias = false;    // the patch embedding (Conv3d) has a bias
  /// Learned absolute position embedding (Qwen3-VL): a square table of this many entries,
  /// interpolated bilinearly to each image's grid; 0: none.
  uint32_t position_embeddings = 0;
  /// Layers (ascending) after which a DeepStack merger (Qwen3-VL) turns the hidden states into
  /// extra LLM-width features, each costing what the final merger costs; empty: none.
  std::vector<uint32_t> deepstack_layers;

  /// The position table's side: √position_embeddings, rounded (Validate refuses a non-square).
  uint32_t position_side() const;
  /// Qwen2.5-VL's time-aligned M-RoPE: a video's temporal position advances this many steps
  /// per second of video (vision_config.tokens_per_second); 0 advances it by one per temporal
  /// grid step, as Qwen2-VL does.
  double tokens_per_second = 0;

  /// Errors: InvalidArgument naming the preset and the bad field.
  Status Validate() const;
};

/// What one image becomes under a vision config, and what encoding it costs.
struct ImageCost {
  uint32_t resized_width = 0;  // pixels the encoder sees (tile grid × tile_size for kTiles)
  uint32_t resized_height = 0;
  uint32_t llm_tokens = 0;  // placeholder tokens in the LLM sequence
  uint32_t patches = 0;     // encoder sequence length, all tiles together
  uint32_t tiles = 1;       // encoder passes (kTiles: grid + thumbnail; else 1)
  double train_flops = 0;   // forward + backward (3 × forward) FLOPs of encoder + merger
};

/// The resize rule of a kSmartResize preset: factor patch_size × spatial_merge and the preset's
/// pixel bounds. Errors: InvalidArgument naming the preset when it resizes by another rule.
Result<media::ResizeRule> ResizeRuleOf(const VisionConfig& config);

/// What one video becomes under a vision config, and what encoding it costs.
struct VideoCost {
  uint32_t sampled_frames = 0;  // frames media::SampleVideo picks (a multiple of temporal_patch)
  uint32_t resized_width = 0;   // every sampled frame's size
  uint32_t resized_height = 0;
  uint32_t grid_t = 0;          // sampled_frames / temporal_patch
  uint32_t llm_tokens = 0;      // grid_t × (h / factor) × (w / factor)
  uint32_t patches = 0;         // encoder sequence length: grid_t × (h / patch) × (w / patch)
  double train_flops = 0;       // forward + backward (3 × forward) FLOPs of encoder + merger
  float second_per_grid_t = 0;  // seconds one grid step spans (media::VideoSampling's rule)
};

/// The video sampling rule of a kSmartResize preset: qwen-vl-utils' defaults
/// (media::VideoSamplingRule) with the preset's factor (patch_size × spatial_merge) and its
/// temporal_patch as the frame factor; under an all-frames budget, its bounds. Errors:
/// InvalidArgument naming the preset when it resizes by another rule or has no temporal patch above
/// 1 (it cannot encode video).
Result<media::VideoSamplingRule> VideoRuleOf(const VisionConfig& config);

/// Cost one video of `frames` frames at `fps_milli` / 1000 frames per second, `width` ×
/// `height` pixels: frames and frame size from media::SampleVideo (the one rule the loader
/// follows), `temporal_patch` frames merged into one grid step; each grid step's patches attend
/// among themselves, as Qwen-VL's encoder does, so the cost is grid_t image-sized passes.
/// Errors: those of VideoRuleOf and media::SampleVideo (too few frames, an extreme aspect
/// ratio), naming the size. With `groups` > 0 the item is one temporal group of a video
/// written as timestamped groups (store::MediaMeta::groups): `temporal_patch` frames, grid_t 1;
/// InvalidArgument when the sampling gives another number of groups (a dataset prepared under
/// another video rule).
Result<VideoCost> CostVideo(const VisionConfig& config, uint32_t width, uint32_t height,
                            uint32_t frames, uint32_t fps_milli, uint32_t llm_hidden,
                            uint32_t groups = 0);

/// What the vision rule makes of one `width` × `height` image: resized size, patches, tiles and
/// LLM tokens (an ImageCost without FLOPs, so counting needs no LLM). Errors: InvalidArgument
/// for a zero side or an extreme aspect ratio (naming the size), or the rule's.
Result<ImageCost> ImageShape(const VisionConfig& config, uint32_t width, uint32_t height);

/// Cost one `height` × `width` image (the processors' order, as media::SmartResize): ImageShape and
/// the encoder's training FLOPs. `llm_hidden` is the merger's output width. Linear layers cost ∝
/// patches; attention ∝ patches² on full-attention layers and ∝ patches × window patches on
/// windowed ones (per tile for kTiles). Errors: InvalidArgument for a zero side or an extreme
/// aspect ratio (naming the size).
Result<ImageCost> CostImage(const VisionConfig& config, uint32_t height, uint32_t width,
                            uint32_t llm_hidden);

}  // namespace mmpt::cost
