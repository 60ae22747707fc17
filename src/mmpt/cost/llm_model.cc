#include "mmpt/cost/llm_model.h"

namespace mmpt::cost {

double LlmConfig::LinearTrainFlopsPerToken() const {
  const double h = hidden;
  const double q_dim = static_cast<double>(heads) * head_dim;
  const double kv_dim = static_cast<double>(kv_heads) * head_dim;
  double per_layer = 2.0 * h * (q_dim + 2.0 * kv_dim) + 2.0 * q_dim * h;  // q, k, v, o
  if (moe_experts > 0) {
    per_layer += 2.0 * 3.0 * h * moe_ffn * moe_active;  // active SwiGLU experts
    per_layer += 2.0 * h * moe_experts;                 // router
  }
  per_layer += 2.0 * 3.0 * h * ffn;  // dense SwiGLU (shared) MLP, if any
  double forward = layers * per_layer + 2.0 * h * vocab;
  return 3.0 * forward;
}

double LlmConfig::AttentionTrainFlops(uint64_t length) const {
  // Causal: query i attends to i + 1 keys; 2 FLOPs per multiply-add, for QKᵀ and for AV.
  double l = static_cast<double>(length);
  double pairs = l * (l + 1.0) / 2.0;
  double forward = layers * 2.0 * 2.0 * pairs * (static_cast<double>(heads) * head_dim);
  return 3.0 * forward;
}

Status LlmConfig::Validate() const {
  auto bad = [&](std::string_view field) {
    return Status::InvalidArgument("llm preset '{}': field '{}' is missing or invalid", name,
                                   field);
  };
  if (hidden == 0) return bad("hidden");
  if (layers == 0) return bad("layers");
  if (heads == 0) return bad("heads");
  if (kv_heads == 0 || heads % kv_heads != 0) return bad("kv_heads");
  if (head_dim == 0) return bad("head_dim");
  if (vocab == 0) return bad("vocab");
  if (moe_experts == 0 && ffn == 0) return bad("ffn (or moe)");
  if (moe_experts > 0 && (moe_active == 0 || moe_active > moe_experts || moe_ffn == 0)) {
    return bad("moe");
  }
  return Status::OK();
}

Status HardwareConfig::Validate() const {
  auto bad = [&](std::string_view field) {
    return Status::InvalidArgument("hardware preset '{}': field '{}' is missing or invalid", name,
                                   field);
  };
  if (!(bf16_flops > 0)) return bad("bf16_flops");
  if (!(mfu > 0 && mfu <= 1)) return bad("mfu");
  if (!(vision_mfu > 0 && vision_mfu <= 1)) return bad("vision_mfu");
  if (!(attention_mfu >= 0 && attention_mfu <= 1)) return bad("attention_mfu");
  if (!(native_encoder_factor >= 0 && native_encoder_factor < 1e6)) {
    return bad("native_encoder_factor");
  }
  return Status::OK();
}

}  // namespace mmpt::cost
