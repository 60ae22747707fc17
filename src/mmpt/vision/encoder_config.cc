#include "mmpt/vision/encoder_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace mmpt::vision {

Result<EncoderConfig> MakeEncoderConfig(const cost::VisionConfig& p, uint32_t out_hidden) {
  MMPT_RETURN_IF_ERROR(p.Validate());
  auto unsupported = [&](std::string_view why) {
    return Status::InvalidArgument(
        "vision preset '{}' does not describe a Qwen2-VL, Qwen2.5-VL or Qwen3-VL tower the "
        "native encoder builds: {}",
        p.name, why);
  };
  if (p.rule != cost::ResolutionRule::kSmartResize)
    return unsupported("its rule is not smart_resize");
  if (p.norm.empty() || p.activation.empty()) {
    return unsupported("it has no encoder.norm and encoder.activation");
  }
  if (p.gated_mlp != (p.activation == "silu")) {
    return unsupported("a gated MLP uses silu, an ungated one quick_gelu or gelu_pytorch_tanh");
  }
  if (p.hidden % p.heads != 0 || (p.hidden / p.heads) % 4 != 0) {
    return unsupported(
        fmt::format("hidden {} over {} heads is not a multiple of 4 per head", p.hidden, p.heads));
  }
  if (!p.deepstack_layers.empty() && p.activation != "gelu_pytorch_tanh") {
    return unsupported("DeepStack mergers belong to Qwen3-VL's tower (gelu_pytorch_tanh)");
  }
  if (out_hidden == 0) return Status::InvalidArgument("out_hidden must be > 0");
  EncoderConfig c;
  c.preset = p.name;
  c.patch_size = p.patch_size;
  c.temporal_patch = p.temporal_patch;
  c.spatial_merge = p.spatial_merge;
  c.hidden = p.hidden;
  c.layers = p.layers;
  c.heads = p.heads;
  c.mlp_hidden = p.mlp_hidden;
  c.out_hidden = out_hidden;
  c.tower = p.activation == "silu"         ? Tower::kQwen25Vl
            : p.activation == "quick_gelu" ? Tower::kQwen2Vl
                                           : Tower::kQwen3Vl;
  c.gated_mlp = p.gated_mlp;
  c.rms_norm = p.norm == "rms_norm";
  c.norm_eps = p.norm_eps;
  c.rope_theta = p.rope_theta;
  c.patch_bias = p.patch_bias;
  c.position_side = p.position_side();
  c.deepstack_layers = p.deepstack_layers;
  c.full_attention.assign(p.layers, false);
  for (uint32_t layer : p.full_attention_layers) c.full_attention[layer] = true;
  if (p.full_attention_layers.size() < p.layers) {
    const uint32_t merged_px = p.patch_size * p.spatial_merge;
    if (p.window_size % merged_px != 0) {
      return unsupported(
          fmt::format("window_size {} is not a multiple of {} pixels", p.window_size, merged_px));
    }
    c.window_merged = p.window_size / merged_px;
  }
  return c;
}

std::vector<ParameterSpec> Parameters(const EncoderConfig& c) {
  const int64_t d = c.hidden, i = c.mlp_hidden, m = int64_t{c.hidden} * c.merge_rows();
  const bool qwen3 = c.tower == Tower::kQwen3Vl;
  std::vector<ParameterSpec> specs;
  specs.push_back({"patch_embed.proj.weight",
                   {d, c.in_channels, c.temporal_patch, c.patch_size, c.patch_size}});
  if (c.patch_bias) specs.push_back({"patch_embed.proj.bias", {d}});
  if (c.position_side > 0) {
    specs.push_back({"pos_embed.weight", {int64_t{c.position_side} * c.position_side, d}});
  }
  auto norm = [&](const std::string& name, int64_t width) {
    specs.push_back({name + ".weight", {width}});
    if (!c.rms_norm) specs.push_back({name + ".bias", {width}});
  };
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    specs.push_back({name + ".weight", {out, in}});
    specs.push_back({name + ".bias", {out}});
  };
  // A merger: norm over hidden (the final one) or over the merged width (DeepStack's), then
  // merged width → merged width → out_hidden.
  auto merger = [&](const std::string& name, int64_t norm_width) {
    norm(name + (qwen3 ? "norm" : "ln_q"), norm_width);
    linear(name + (qwen3 ? "linear_fc1" : "mlp.0"), m, m);
    linear(name + (qwen3 ? "linear_fc2" : "mlp.2"), c.out_hidden, m);
  };
  for (uint32_t layer = 0; layer < c.layers; ++layer) {
    const std::string block = fmt::format("blocks.{}.", layer);
    norm(block + "norm1", d);
    norm(block + "norm2", d);
    linear(block + "attn.qkv", 3 * d, d);
    linear(block + "attn.proj", d, d);
    if (c.gated_mlp) {
      linear(block + "mlp.gate_proj", i, d);
      linear(block + "mlp.up_proj", i, d);
      linear(block + "mlp.down_proj", d, i);
    } else {
      linear(block + (qwen3 ? "mlp.linear_fc1" : "mlp.fc1"), i, d);
      linear(block + (qwen3 ? "mlp.linear_fc2" : "mlp.fc2"), d, i);
    }
  }
  merger("merger.", d);
  for (size_t k = 0; k < c.deepstack_layers.size(); ++k) {
    merger(fmt::format("deepstack_merger_list.{}.", k), m);
  }
  return specs;
}

Result<Recompute> ParseRecompute(std::string_view name) {
  if (name == "none") return Recompute::kNone;
  if (name == "selective") return Recompute::kSelective;
  if (name == "full") return Recompute::kFull;
  return Status::InvalidArgument("recompute '{}': expected none, selective or full", name);
}

std::string FormatShape(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace mmpt::vision
