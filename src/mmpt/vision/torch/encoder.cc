#include "mmpt/vision/torch/encoder.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <span>

#include "mmpt/vision/layout.h"
#include "mmpt/vision/torch/attention.h"

namespace mmpt::vision {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Everything a block needs besides its input and weights: one per Encode call, shared with the
// backward pass of fully recomputed blocks.
struct Pack {
  EncoderConfig config;
  at::Tensor cos, sin;  // [rows, head_dim] fp32, in the blocks' row order
  std::vector<int64_t> cu_seqlens, cu_window_seqlens;
  bool keep_probabilities;
};

at::Tensor Norm(const EncoderConfig& c, const at::Tensor& x, at::TensorList w) {
  if (!c.rms_norm) return at::layer_norm(x, {x.size(-1)}, w[0], w[1], c.norm_eps);
  auto xf = x.to(at::kFloat);
  auto normed = xf * at::rsqrt(xf.pow(2).mean(-1, true) + c.norm_eps);
  return w[0] * normed.to(x.scalar_type());
}

at::Tensor Rotate(const at::Tensor& x, const Pack& pack) {
  // x [rows, heads, head_dim]: x·cos + rotate_half(x)·sin, in fp32 as the reference does.
  auto xf = x.to(at::kFloat);
  const int64_t half = x.size(-1) / 2;
  auto rotated = at::cat({-xf.narrow(-1, half, half), xf.narrow(-1, 0, half)}, -1);
  return (xf * pack.cos.unsqueeze(1) + rotated * pack.sin.unsqueeze(1)).to(x.scalar_type());
}

// A block's weights come in Parameters() order: norm1, norm2, qkv, proj, then the MLP's.
at::Tensor Block(const Pack& pack, uint32_t layer, const at::Tensor& x, at::TensorList w,
                 bool keep_probabilities) {
  const EncoderConfig& c = pack.config;
  const size_t n = c.rms_norm ? 1 : 2;
  const auto norm1 = w.slice(0, n), norm2 = w.slice(n, n);
  const auto& qkv_w = w[2 * n];
  const auto& qkv_b = w[2 * n + 1];
  const auto& proj_w = w[2 * n + 2];
  const auto& proj_b = w[2 * n + 3];
  const auto mlp = w.slice(2 * n + 4);
  const int64_t rows = x.size(0), heads = c.heads, dim = c.head_dim();

  auto qkv = at::linear(Norm(c, x, norm1), qkv_w, qkv_b).view({rows, 3, heads, dim});
  auto q = Rotate(qkv.select(1, 0), pack), k = Rotate(qkv.select(1, 1), pack);
  auto v = qkv.select(1, 2).contiguous();
  const auto& cu = c.full_attention[layer] ? pack.cu_seqlens : pack.cu_window_seqlens;
  auto attn = VarlenAttention(q, k, v, cu, keep_probabilities).reshape({rows, c.hidden});
  auto h = x + at::linear(attn, proj_w, proj_b);

  auto y = Norm(c, h, norm2);
  if (c.gated_mlp) {
    y = at::silu(at::linear(y, mlp[0], mlp[1])) * at::linear(y, mlp[2], mlp[3]);
    y = at::linear(y, mlp[4], mlp[5]);
  } else {
    y = at::linear(y, mlp[0], mlp[1]);
    // Qwen3-VL's tanh-approximated GELU, else Qwen2-VL's QuickGELU.
    y = c.tower == Tower::kQwen3Vl ? at::gelu(y, "tanh") : y * at::sigmoid(1.702 * y);
    y = at::linear(y, mlp[2], mlp[3]);
  }
  return h + y;
}

// A merger: `norm` then the merged-width MLP (exact GELU) to out_hidden. The final merger
// normalizes each patch before the merge; a DeepStack merger (`postshuffle`) the merged row.
at::Tensor Merger(const EncoderConfig& c, const at::Tensor& x, at::TensorList w, bool postshuffle) {
  const size_t n = c.rms_norm ? 1 : 2;
  const int64_t merged_width = int64_t{c.hidden} * c.merge_rows();
  auto y = postshuffle ? Norm(c, x.reshape({-1, merged_width}), w.slice(0, n))
                       : Norm(c, x, w.slice(0, n)).reshape({-1, merged_width});
  y = at::gelu(at::linear(y, w[n], w[n + 1]));
  return at::linear(y, w[n + 2], w[n + 3]);
}

struct PackHolder : torch::CustomClassHolder {
  std::shared_ptr<const Pack> pack;
};

// A block that keeps only its input: the backward pass runs it again with autograd on.
struct RecomputedBlock : torch::autograd::Function<RecomputedBlock> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, at::TensorList w,
                            std::shared_ptr<const Pack> pack, int64_t layer) {
    auto holder = c10::make_intrusive<PackHolder>();
    holder->pack = pack;
    ctx->saved_data["pack"] = c10::IValue::make_capsule(std::move(holder));
    ctx->saved_data["layer"] = layer;
    std::vector<at::Tensor> saved{x};
    saved.insert(saved.end(), w.begin(), w.end());
    ctx->save_for_backward(saved);
    return Block(*pack, static_cast<uint32_t>(layer), x, w, /*keep_probabilities=*/false);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto pack =
        c10::static_intrusive_pointer_cast<PackHolder>(ctx->saved_data["pack"].toCapsule())->pack;
    const auto layer = static_cast<uint32_t>(ctx->saved_data["layer"].toInt());
    variable_list saved = ctx->get_saved_variables();
    variable_list inputs;
    std::vector<size_t> which;
    for (size_t i = 0; i < saved.size(); ++i) {
      const bool grad = saved[i].requires_grad();
      saved[i] = saved[i].detach().requires_grad_(grad);
      if (grad) {
        inputs.push_back(saved[i]);
        which.push_back(i);
      }
    }
    variable_list result(saved.size() + 2);  // + pack and layer, which take no gradient
    if (inputs.empty()) return result;
    at::AutoGradMode grad_on(true);
    auto y = Block(*pack, layer, saved[0], at::TensorList(saved).slice(1), false);
    auto got = torch::autograd::grad({y}, inputs, {grads[0]}, false, false, true);
    // forward's inputs are (x, w..., pack, layer): x and each weight map to one slot.
    for (size_t i = 0; i < which.size(); ++i) result[which[i]] = got[i];
    return result;
  }
};

std::vector<int64_t> ShapeOf(const at::Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

std::vector<GridThw> Grids(const at::Tensor& grid_thw) {
  auto g = grid_thw.to(at::kCPU, at::kLong).contiguous();
  std::vector<GridThw> grids(g.size(0));
  const int64_t* p = g.data_ptr<int64_t>();
  for (size_t i = 0; i < grids.size(); ++i) grids[i] = {p[3 * i], p[3 * i + 1], p[3 * i + 2]};
  return grids;
}

at::Tensor LongTensor(const std::vector<int64_t>& values, const at::Device& device) {
  auto t = at::empty({static_cast<int64_t>(values.size())}, at::kLong);
  std::memcpy(t.data_ptr<int64_t>(), values.data(), values.size() * sizeof(int64_t));
  return t.to(device);
}

// cos and sin [rows, head_dim] of the 2-D rotary embedding: the first half of each head's
// frequencies turn with the patch row, the second half with the patch column.
std::pair<at::Tensor, at::Tensor> Rotary(const EncoderConfig& c, const EncoderLayout& layout,
                                         const at::Device& device) {
  const int64_t quarter = c.head_dim() / 4;
  // In fp32, as Hugging Face computes it, so the angles match to the last bit they can.
  auto inv_freq =
      (1.0 / at::pow(c.rope_theta, at::arange(0, 2 * quarter, 2, at::kFloat) / (2 * quarter)))
          .to(device);
  auto h = LongTensor(layout.row_h, device).to(at::kFloat).unsqueeze(1) * inv_freq;
  auto w = LongTensor(layout.row_w, device).to(at::kFloat).unsqueeze(1) * inv_freq;
  auto freqs = at::cat({h, w, h, w}, 1);  // [rows, head_dim]
  return {freqs.cos(), freqs.sin()};
}

// Qwen3-VL's learned position embedding [rows, hidden] in the blocks' row order: each image's
// grid spread evenly over the side × side table (torch.linspace in fp32, as Hugging Face's
// fast_pos_embed_interpolate places it), the four surrounding entries mixed bilinearly with
// weights of the table's type, summed in Hugging Face's order; every frame alike.
at::Tensor PositionEmbedding(const EncoderConfig& c, std::span<const GridThw> grids,
                             const EncoderLayout& layout, const at::Tensor& table) {
  const int64_t side = c.position_side;
  const auto row_h = LongTensor(layout.row_h, at::kCPU), row_w = LongTensor(layout.row_w, at::kCPU);
  std::vector<at::Tensor> hs, ws;  // each row's fractional place in the table
  int64_t start = 0;
  for (const GridThw& g : grids) {
    const int64_t n = g.t * g.h * g.w;
    hs.push_back(
        at::linspace(0, side - 1, g.h, at::kFloat).index_select(0, row_h.narrow(0, start, n)));
    ws.push_back(
        at::linspace(0, side - 1, g.w, at::kFloat).index_select(0, row_w.narrow(0, start, n)));
    start += n;
  }
  if (hs.empty()) return at::zeros({0, table.size(1)}, table.options());
  const auto h = at::cat(hs), w = at::cat(ws);
  const auto h0 = h.to(at::kLong), w0 = w.to(at::kLong);  // floor: places are ≥ 0
  const auto h1 = (h0 + 1).clamp_max(side - 1), w1 = (w0 + 1).clamp_max(side - 1);
  const auto dh = h - h0, dw = w - w0;
  const std::array<at::Tensor, 4> index = {h0 * side + w0, h0 * side + w1, h1 * side + w0,
                                           h1 * side + w1};
  const std::array<at::Tensor, 4> weight = {(1 - dh) * (1 - dw), (1 - dh) * dw, dh * (1 - dw),
                                            dh * dw};
  at::Tensor sum;
  for (size_t k = 0; k < 4; ++k) {
    auto term = table.index_select(0, index[k].to(table.device())) *
                weight[k].to(table.options()).unsqueeze(1);
    sum = k == 0 ? term : sum + term;
  }
  return sum;
}

Status CheckWeights(const EncoderConfig& c, at::TensorList weights) {
  const auto specs = Parameters(c);
  if (weights.size() != specs.size()) {
    return Status::InvalidArgument("the encoder takes {} weights, got {}", specs.size(),
                                   weights.size());
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::vector<int64_t> shape = ShapeOf(weights[i]);
    if (shape != specs[i].shape) {
      return Status::InvalidArgument("weight '{}' is {} where {} is expected", specs[i].name,
                                     FormatShape(shape), FormatShape(specs[i].shape));
    }
    if (weights[i].scalar_type() != weights[0].scalar_type() ||
        !at::isFloatingType(weights[i].scalar_type())) {
      return Status::InvalidArgument("weight '{}' is {}: every weight must have one floating type",
                                     specs[i].name, c10::toString(weights[i].scalar_type()));
    }
  }
  return Status::OK();
}

}  // namespace

Result<Encoded> Encode(const EncoderConfig& c, at::TensorList weights,
                       const at::Tensor& pixel_values, const at::Tensor& grid_thw,
                       Recompute recompute) {
  MMPT_RETURN_IF_ERROR(CheckWeights(c, weights));
  if (pixel_values.dim() != 2 || pixel_values.size(1) != c.patch_values() ||
      !at::isFloatingType(pixel_values.scalar_type())) {
    return Status::InvalidArgument(
        "pixel_values must be floating point [patches, {}] (channels × temporal patch × patch²), "
        "got {} {}",
        c.patch_values(), c10::toString(pixel_values.scalar_type()),
        FormatShape(ShapeOf(pixel_values)));
  }
  if (grid_thw.dim() != 2 || grid_thw.size(1) != 3 || at::isFloatingType(grid_thw.scalar_type())) {
    return Status::InvalidArgument("image_grid_thw must be integers [images, 3], got {}",
                                   FormatShape(ShapeOf(grid_thw)));
  }
  const auto grids = Grids(grid_thw);
  MMPT_ASSIGN_OR_RETURN(EncoderLayout layout, PlanLayout(c, grids, pixel_values.size(0)));

  const at::Device device = weights[0].device();
  auto pack = std::make_shared<Pack>();
  pack->config = c;
  pack->cu_seqlens = layout.cu_seqlens;
  pack->cu_window_seqlens = layout.cu_window_seqlens;
  std::tie(pack->cos, pack->sin) = Rotary(c, layout, device);

  const int64_t rows = layout.rows, merge = c.merge_rows();
  // Weights in Parameters() order: the patch embedding (and its bias), the position table, the
  // blocks, the merger, the DeepStack mergers.
  size_t next = 1;
  const at::Tensor patch_bias = c.patch_bias ? weights[next++] : at::Tensor();
  auto x = at::linear(pixel_values.to(weights[0].options()), weights[0].reshape({c.hidden, -1}),
                      patch_bias);
  if (c.position_side > 0) x = x + PositionEmbedding(c, grids, layout, weights[next++]);
  at::Tensor groups, inverse;
  if (c.window_merged > 0) {
    // Rows move in whole merge groups into window order, and back after the merger.
    groups = LongTensor(layout.window_groups, device);
    inverse = at::argsort(groups);
    auto to_windows = [&](const at::Tensor& t) {
      return t.view({rows / merge, merge, t.size(1)}).index_select(0, groups).view({rows, -1});
    };
    x = to_windows(x);
    pack->cos = to_windows(pack->cos);
    pack->sin = to_windows(pack->sin);
  }
  const size_t norm_size = c.rms_norm ? 1 : 2;
  const size_t block_size = 2 * norm_size + 4 + (c.gated_mlp ? 6 : 4);
  const size_t merger_size = norm_size + 4;
  const auto deepstack_weights = weights.slice(next + c.layers * block_size + merger_size);
  std::shared_ptr<const Pack> shared = pack;
  Encoded out;
  for (uint32_t layer = 0; layer < c.layers; ++layer) {
    const auto w = weights.slice(next + layer * block_size, block_size);
    if (recompute == Recompute::kFull) {
      x = RecomputedBlock::apply(x, w, shared, int64_t{layer});
    } else {
      x = Block(*pack, layer, x, w, recompute == Recompute::kNone);
    }
    const auto k = std::find(c.deepstack_layers.begin(), c.deepstack_layers.end(), layer) -
                   c.deepstack_layers.begin();
    if (static_cast<size_t>(k) < c.deepstack_layers.size()) {
      out.deepstack.push_back(
          Merger(c, x, deepstack_weights.slice(k * merger_size, merger_size), true));
    }
  }
  out.embeddings = Merger(c, x, weights.slice(next + c.layers * block_size, merger_size), false);
  if (inverse.defined()) {
    out.embeddings = out.embeddings.index_select(0, inverse);
    for (at::Tensor& features : out.deepstack) features = features.index_select(0, inverse);
  }
  return out;
}

Result<std::vector<at::Tensor>> ReadWeights(const EncoderConfig& c, const Checkpoint& checkpoint,
                                            at::ScalarType dtype) {
  MMPT_ASSIGN_OR_RETURN(auto entries, checkpoint.Match(Parameters(c)));
  std::vector<at::Tensor> weights;
  for (const TensorEntry* e : entries) {
    at::ScalarType type;
    switch (e->dtype) {
      case DType::kF64: type = at::kDouble; break;
      case DType::kF32: type = at::kFloat; break;
      case DType::kF16: type = at::kHalf; break;
      case DType::kBF16: type = at::kBFloat16; break;
      default:
        return Status::InvalidArgument("{}: tensor '{}' is {}, not floating point",
                                       checkpoint.path(), e->name, DTypeName(e->dtype));
    }
    auto t = at::empty(e->shape, type);  // aligned: the mapping's offsets need not be
    std::memcpy(t.data_ptr(), e->data.data(), e->data.size());
    weights.push_back(t.to(dtype));
  }
  return weights;
}

}  // namespace mmpt::vision
