#include "mmpt/vision/torch/attention.h"

#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>

namespace mmpt::vision {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Segments of one length, consecutive in rows: computed as one [count, heads, length, dim] batch.
struct Run {
  int64_t offset = 0;  // first row
  int64_t count = 0;   // segments
  int64_t length = 0;  // rows per segment
};

std::vector<Run> Runs(const std::vector<int64_t>& cu) {
  std::vector<Run> runs;
  for (size_t i = 1; i < cu.size(); ++i) {
    const int64_t length = cu[i] - cu[i - 1];
    if (length <= 0) continue;
    if (!runs.empty() && runs.back().length == length &&
        runs.back().offset + runs.back().count * length == cu[i - 1]) {
      ++runs.back().count;
    } else {
      runs.push_back({cu[i - 1], 1, length});
    }
  }
  return runs;
}

// Segments `first`..`first + count` of a run as [count, heads, length, dim] (a view of x).
at::Tensor Segments(const at::Tensor& x, const Run& run, int64_t first, int64_t count) {
  return x.narrow(0, run.offset + first * run.length, count * run.length)
      .view({count, run.length, x.size(1), x.size(2)})
      .transpose(1, 2);
}
at::Tensor RowStats(const at::Tensor& x, const Run& run, int64_t first, int64_t count) {
  return x.narrow(0, run.offset + first * run.length, count * run.length)
      .view({count, run.length, x.size(1)})
      .transpose(1, 2);
}

// Elements of one chunk's score matrix in the memory-efficient kernel (64 MiB in fp32).
constexpr int64_t kChunkElements = int64_t{1} << 24;

// How a run is cut: `batch` segments at a time, `rows` query rows at a time.
struct Chunking {
  int64_t batch, rows;
};
Chunking ChunkRun(const Run& run, int64_t heads) {
  const int64_t per_segment = heads * run.length * run.length;
  const int64_t batch = std::clamp<int64_t>(kChunkElements / per_segment, 1, run.count);
  const int64_t rows =
      std::clamp<int64_t>(kChunkElements / (batch * heads * run.length), 1, run.length);
  return {batch, rows};
}

// Flash-style attention on fp32 [rows, heads, dim] tensors: the forward pass keeps a log-sum-exp
// per row and head; the backward pass recomputes each chunk's probabilities from it.
struct EfficientAttention : torch::autograd::Function<EfficientAttention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, const std::vector<int64_t>& cu) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
    auto out = at::empty_like(q);
    auto lse = at::empty({q.size(0), q.size(1)}, q.options());
    for (const Run& run : Runs(cu)) {
      const Chunking chunk = ChunkRun(run, q.size(1));
      for (int64_t b = 0; b < run.count; b += chunk.batch) {
        const int64_t n = std::min(chunk.batch, run.count - b);
        auto qs = Segments(q, run, b, n), ks = Segments(k, run, b, n), vs = Segments(v, run, b, n);
        auto os = Segments(out, run, b, n);
        auto ls = RowStats(lse, run, b, n);
        for (int64_t r = 0; r < run.length; r += chunk.rows) {
          const int64_t rows = std::min(chunk.rows, run.length - r);
          auto s = at::matmul(qs.narrow(2, r, rows), ks.transpose(-1, -2)).mul_(scale);
          auto m = at::logsumexp(s, -1);
          s.sub_(m.unsqueeze(-1)).exp_();
          os.narrow(2, r, rows).copy_(at::matmul(s, vs));
          ls.narrow(2, r, rows).copy_(m);
        }
      }
    }
    ctx->save_for_backward({q, k, v, out, lse});
    ctx->saved_data["cu"] = c10::IValue(cu);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3], &lse = saved[4];
    const std::vector<int64_t> cu = ctx->saved_data["cu"].toIntVector();
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
    const auto g = grads[0].contiguous();
    const auto delta = (g * out).sum(-1);  // Σ_d dO·O per row and head
    auto dq = at::zeros_like(q), dk = at::zeros_like(k), dv = at::zeros_like(v);
    for (const Run& run : Runs(cu)) {
      const Chunking chunk = ChunkRun(run, q.size(1));
      for (int64_t b = 0; b < run.count; b += chunk.batch) {
        const int64_t n = std::min(chunk.batch, run.count - b);
        auto qs = Segments(q, run, b, n), ks = Segments(k, run, b, n), vs = Segments(v, run, b, n);
        auto gs = Segments(g, run, b, n), dqs = Segments(dq, run, b, n);
        auto ls = RowStats(lse, run, b, n), ds_rows = RowStats(delta, run, b, n);
        auto dk_acc = at::zeros_like(ks), dv_acc = at::zeros_like(vs);
        for (int64_t r = 0; r < run.length; r += chunk.rows) {
          const int64_t rows = std::min(chunk.rows, run.length - r);
          auto qc = qs.narrow(2, r, rows), gc = gs.narrow(2, r, rows);
          auto p = at::matmul(qc, ks.transpose(-1, -2)).mul_(scale);
          p.sub_(ls.narrow(2, r, rows).unsqueeze(-1)).exp_();
          dv_acc.add_(at::matmul(p.transpose(-1, -2), gc));
          auto ds = at::matmul(gc, vs.transpose(-1, -2));
          ds.sub_(ds_rows.narrow(2, r, rows).unsqueeze(-1)).mul_(p);
          dqs.narrow(2, r, rows).copy_(at::matmul(ds, ks).mul_(scale));
          dk_acc.add_(at::matmul(ds.transpose(-1, -2), qc).mul_(scale));
        }
        Segments(dk, run, b, n).copy_(dk_acc);
        Segments(dv, run, b, n).copy_(dv_acc);
      }
    }
    return {dq, dk, dv, at::Tensor()};
  }
};

}  // namespace

at::Tensor VarlenAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const std::vector<int64_t>& cu_seqlens, bool keep_probabilities) {
  if (!keep_probabilities) {
    const auto f32 = [](const at::Tensor& x) { return x.to(at::kFloat).contiguous(); };
    return EfficientAttention::apply(f32(q), f32(k), f32(v), cu_seqlens).to(q.scalar_type());
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
  // Softmax in fp32 at least (Hugging Face's eager path: bf16 scores, fp32 softmax).
  const auto softmax_type = at::promote_types(q.scalar_type(), at::kFloat);
  std::vector<at::Tensor> parts;
  for (const Run& run : Runs(cu_seqlens)) {
    auto qs = Segments(q, run, 0, run.count), ks = Segments(k, run, 0, run.count);
    auto p = at::softmax(at::matmul(qs, ks.transpose(-1, -2)) * scale, -1, softmax_type)
                 .to(q.scalar_type());
    parts.push_back(at::matmul(p, Segments(v, run, 0, run.count))
                        .transpose(1, 2)
                        .reshape({run.count * run.length, q.size(1), q.size(2)}));
  }
  return parts.size() == 1 ? parts[0] : at::cat(parts, 0);
}

}  // namespace mmpt::vision
