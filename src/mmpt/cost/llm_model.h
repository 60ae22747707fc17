#pragma once

#include <cstdint>
#include <string>

#include "mmpt/core/status.h"

namespace mmpt::cost {

/// A decoder-only LLM, dense or mixture-of-experts (a preset under presets/llm/).
struct LlmConfig {
  std::string name;
  uint32_t hidden = 0;
  uint32_t layers = 0;
  uint32_t heads = 0;     // query heads
  uint32_t kv_heads = 0;  // key/value heads (GQA)
  uint32_t head_dim = 0;
  uint32_t vocab = 0;
  uint32_t ffn = 0;          // dense SwiGLU width (0 for MoE-only layers)
  uint32_t moe_experts = 0;  // routed experts (0: dense)
  uint32_t moe_active = 0;   // experts per token
  uint32_t moe_ffn = 0;      // width of one expert

  /// Training FLOPs (forward + backward = 3 × forward) per token of the linear layers: attention
  /// projections, the MLP (active experts and router for MoE) and the output head.
  double LinearTrainFlopsPerToken() const;
  /// Training FLOPs of causal attention over one sub-sequence of `length` tokens
  /// (QKᵀ and AV, half the square), summed over layers: the Σ lᵢ² term of a pack.
  double AttentionTrainFlops(uint64_t length) const;

  /// Errors: InvalidArgument naming the preset and the bad field.
  Status Validate() const;
};

/// A GPU: dense bf16 peak and the utilizations that turn FLOPs into seconds
/// (a preset under presets/hardware/).
struct HardwareConfig {
  std::string name;
  double bf16_flops = 0;  // dense peak, FLOP/s
  double mfu = 0;         // achieved fraction of peak in the LLM
  double vision_mfu = 0;  // achieved fraction of peak in the vision encoder
  /// Achieved fraction of peak in the LLM's causal attention (QKᵀ and AV, their softmax and
  /// masking), which runs at another rate than its linear layers (bench/replay_step.py fits
  /// both). 0: the same as mfu.
  double attention_mfu = 0;
  /// The Hugging Face-style encoder's time over mmpt's native encoder's on this device, as
  /// bench/encoder_bench.py measures it (the comment names the device); then vision_mfu is the
  /// native encoder's. 0: not measured here, and the ablation has no native-encoder stage.
  double native_encoder_factor = 0;
  /// Which of these figures were measured on the device, by what and when (bench/replay_step.py
  /// writes it when it calibrates). Empty: all assumed (datasheet peak, guessed utilizations).
  std::string measured;

  double LlmSeconds(double flops) const { return flops / (bf16_flops * mfu); }
  double AttentionMfu() const { return attention_mfu > 0 ? attention_mfu : mfu; }
  double AttentionSeconds(double flops) const { return flops / (bf16_flops * AttentionMfu()); }
  double VisionSeconds(double flops) const { return flops / (bf16_flops * vision_mfu); }
  /// Errors: InvalidArgument naming the preset and the bad field.
  Status Validate() const;
};

}  // namespace mmpt::cost
