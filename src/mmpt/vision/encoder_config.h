#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cost/vision_model.h"

namespace mmpt::vision {

/// Which Hugging Face tower the blocks and parameter names follow; the preset's activation
/// names it.
enum class Tower : uint8_t {
  kQwen2Vl,   // quick_gelu: LayerNorm, mlp.fc1 → QuickGELU → mlp.fc2; merger ln_q, mlp.0, mlp.2
  kQwen25Vl,  // silu: mlp.gate_proj, up_proj, down_proj (SiLU-gated); merger as Qwen2-VL's
  kQwen3Vl,   // gelu_pytorch_tanh: mlp.linear_fc1 → tanh-GELU → mlp.linear_fc2; merger norm,
              // linear_fc1, linear_fc2, and deepstack_merger_list.K with the same names
};

/// The native encoder's shape: a Qwen2-VL, Qwen2.5-VL or Qwen3-VL vision tower, from a vision
/// preset's `resolution` and `encoder` fields (cost::VisionConfig is their one reader) plus the
/// merger's output width, which is the LLM's hidden size.
struct EncoderConfig {
  std::string preset;
  uint32_t patch_size = 14;
  uint32_t temporal_patch = 2;
  uint32_t spatial_merge = 2;
  uint32_t in_channels = 3;
  uint32_t hidden = 0;
  uint32_t layers = 0;
  uint32_t heads = 0;
  uint32_t mlp_hidden = 0;
  uint32_t out_hidden = 0;  // merger output: the LLM's hidden size
  Tower tower = Tower::kQwen2Vl;
  bool gated_mlp = false;  // SiLU-gated (gate, up, down) instead of fc1, act, fc2
  bool rms_norm = false;   // RMSNorm without bias instead of LayerNorm
  double norm_eps = 1e-6;
  double rope_theta = 10000;
  bool patch_bias = false;
  uint32_t position_side = 0;              // learned position table of side² entries (0: none)
  std::vector<bool> full_attention;        // per layer: full attention, else windowed
  uint32_t window_merged = 0;              // window side in merged units (0: no windowed layers)
  std::vector<uint32_t> deepstack_layers;  // a DeepStack merger after each of these blocks

  uint32_t head_dim() const { return hidden / heads; }
  /// Rows of pixel_values per patch: channels × temporal patch × patch².
  uint32_t patch_values() const { return in_channels * temporal_patch * patch_size * patch_size; }
  /// Patches merged into one output row (spatial_merge²).
  uint32_t merge_rows() const { return spatial_merge * spatial_merge; }
};

/// Build the encoder of `preset` with merger output `out_hidden`. Errors: InvalidArgument naming
/// the preset when it does not describe a Qwen-VL tower (no `norm`/`activation`, another
/// resolution rule, an activation that does not fit the MLP, a head size that is not a multiple
/// of 4, a window that is not a whole number of merged patches).
Result<EncoderConfig> MakeEncoderConfig(const cost::VisionConfig& preset, uint32_t out_hidden);

/// What a block keeps for its backward pass. kNone keeps every activation, attention
/// probabilities included; kSelective recomputes core attention (softmax(QKᵀ)V) in the backward
/// pass, so it keeps no segment² matrix; kFull keeps only each block's input and recomputes the
/// block.
enum class Recompute : uint8_t { kNone, kSelective, kFull };

/// "none", "selective" or "full". Errors: InvalidArgument listing them.
Result<Recompute> ParseRecompute(std::string_view name);

/// One parameter of the encoder: Hugging Face's name (without the `visual.` prefix) and shape.
struct ParameterSpec {
  std::string name;
  std::vector<int64_t> shape;
};

/// Every parameter in a fixed order (the order the torch encoder takes its weights in).
std::vector<ParameterSpec> Parameters(const EncoderConfig& config);

/// "[1280, 3, 2, 14, 14]".
std::string FormatShape(const std::vector<int64_t>& shape);

}  // namespace mmpt::vision
