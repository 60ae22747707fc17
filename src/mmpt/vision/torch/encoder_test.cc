// The native encoder on libtorch: attention, recomputation and packing properties. Fidelity to
// Hugging Face's modules is tests/python/test_vision_encoder.py's.
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "mmpt/cost/presets.h"
#include "mmpt/vision/torch/attention.h"
#include "mmpt/vision/torch/encoder.h"

namespace mmpt::vision {
namespace {

EncoderConfig SmallConfig(std::string_view preset) {
  auto p = cost::LoadVisionPreset(preset);
  EXPECT_TRUE(p.ok());
  p->layers = 3;
  p->hidden = 32;
  p->heads = 2;
  p->mlp_hidden = 48;
  p->full_attention_layers =
      p->window_size > 0 ? std::vector<uint32_t>{1} : std::vector<uint32_t>{0, 1, 2};
  if (p->position_embeddings > 0) p->position_embeddings = 36;
  if (!p->deepstack_layers.empty()) p->deepstack_layers = {0, 1};
  auto c = MakeEncoderConfig(*p, 24);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

std::vector<at::Tensor> Weights(const EncoderConfig& c) {
  std::vector<at::Tensor> w;
  for (const ParameterSpec& s : Parameters(c)) {
    w.push_back((torch::randn(s.shape, torch::kDouble) * 0.2).requires_grad_(true));
  }
  return w;
}

TEST(VarlenAttentionTest, EqualsMaskedDenseAttentionAndBothKernelsAgree) {
  torch::manual_seed(1);
  const std::vector<int64_t> cu{0, 5, 10, 15, 22, 23};
  auto q = torch::randn({23, 2, 8}, torch::kDouble).requires_grad_(true);
  auto k = torch::randn({23, 2, 8}, torch::kDouble).requires_grad_(true);
  auto v = torch::randn({23, 2, 8}, torch::kDouble).requires_grad_(true);
  // Dense reference: every row against every row, with a block-diagonal mask.
  auto seg = torch::zeros({23}, torch::kLong);
  for (size_t i = 1; i < cu.size(); ++i)
    seg.narrow(0, cu[i - 1], cu[i] - cu[i - 1]).fill_(int64_t(i));
  auto mask = seg.unsqueeze(0) != seg.unsqueeze(1);
  auto s = torch::einsum("qhd,khd->hqk", {q, k}) / std::sqrt(8.0);
  auto dense =
      torch::einsum("hqk,khd->qhd", {torch::softmax(s.masked_fill(mask, -INFINITY), -1), v});
  auto grad = torch::randn_like(dense);
  auto ref = torch::autograd::grad({dense}, {q, k, v}, {grad});
  for (bool keep : {true, false}) {
    auto out = VarlenAttention(q, k, v, cu, keep);
    // The memory-efficient kernel computes in fp32.
    const double tol = keep ? 1e-12 : 1e-5;
    EXPECT_TRUE(torch::allclose(out.to(torch::kDouble), dense, tol, tol)) << keep;
    auto got = torch::autograd::grad({out}, {q, k, v}, {grad});
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(torch::allclose(got[i].to(torch::kDouble), ref[i], tol, tol)) << keep << i;
    }
  }
}

TEST(EncoderTest, RecomputationChangesNothingButMemory) {
  for (std::string_view preset : {"qwen2.5-vl", "qwen2-vl", "qwen3-vl"}) {
    EncoderConfig c = SmallConfig(preset);
    torch::manual_seed(2);
    auto w = Weights(c);
    // Three images, one larger than a window (24×20 patches = 3×3 windows of 4×4 groups).
    auto grid = torch::tensor({1, 24, 20, 1, 4, 6, 1, 2, 2}, torch::kLong).view({3, 3});
    auto pixels =
        torch::randn({480 + 24 + 4, c.patch_values()}, torch::kDouble).requires_grad_(true);
    std::vector<at::Tensor> inputs(w.begin(), w.end());
    inputs.push_back(pixels);
    std::vector<at::Tensor> out, grads;
    for (Recompute mode : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      auto y = Encode(c, w, pixels, grid, mode);
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      const auto& e = y->embeddings;
      EXPECT_EQ(e.sizes(), (std::vector<int64_t>{127, 24}));
      ASSERT_EQ(y->deepstack.size(), c.deepstack_layers.size());
      auto loss = (e * e).sum();
      for (const at::Tensor& d : y->deepstack) {
        EXPECT_EQ(d.sizes(), e.sizes());
        loss = loss + (d * d).sum();
      }
      auto g = torch::autograd::grad({loss}, inputs);
      if (out.empty()) {
        out.push_back(e);
        out.insert(out.end(), y->deepstack.begin(), y->deepstack.end());
        grads = g;
        continue;
      }
      EXPECT_TRUE(torch::allclose(e, out[0], 1e-5, 1e-6)) << preset;
      for (size_t k = 0; k < y->deepstack.size(); ++k) {
        EXPECT_TRUE(torch::allclose(y->deepstack[k], out[1 + k], 1e-5, 1e-6)) << preset << k;
      }
      for (size_t i = 0; i < g.size(); ++i) {
        EXPECT_TRUE(torch::allclose(g[i], grads[i], 1e-4, 1e-6)) << preset << " input " << i;
      }
    }
  }
}

TEST(EncoderTest, AnImageEncodesTheSameAloneOrPacked) {
  for (std::string_view preset : {"qwen2.5-vl", "qwen3-vl"}) {
    EncoderConfig c = SmallConfig(preset);
    torch::manual_seed(3);
    auto w = Weights(c);
    torch::NoGradGuard no_grad;
    // The second image is a two-frame video: each frame attends to itself only.
    auto a = torch::randn({12 * 16, c.patch_values()}, torch::kDouble),
         b = torch::randn({2 * 8 * 4, c.patch_values()}, torch::kDouble);
    auto ga = torch::tensor({1, 12, 16}, torch::kLong).view({1, 3});
    auto gb = torch::tensor({2, 8, 4}, torch::kLong).view({1, 3});
    auto alone_a = Encode(c, w, a, ga, Recompute::kNone);
    auto alone_b = Encode(c, w, b, gb, Recompute::kNone);
    auto packed = Encode(c, w, torch::cat({b, a}), torch::cat({gb, ga}), Recompute::kNone);
    ASSERT_TRUE(alone_a.ok() && alone_b.ok() && packed.ok());
    EXPECT_TRUE(torch::allclose(
        packed->embeddings, torch::cat({alone_b->embeddings, alone_a->embeddings}), 1e-10, 1e-12))
        << preset;
    for (size_t k = 0; k < c.deepstack_layers.size(); ++k) {
      EXPECT_TRUE(torch::allclose(packed->deepstack[k],
                                  torch::cat({alone_b->deepstack[k], alone_a->deepstack[k]}), 1e-10,
                                  1e-12));
    }
    // A frame encodes as the same image alone would: the position table is laid out per frame.
    auto frame =
        Encode(c, w, b.narrow(0, 32, 32), torch::tensor({1, 8, 4}).view({1, 3}), Recompute::kNone);
    ASSERT_TRUE(frame.ok());
    EXPECT_TRUE(
        torch::allclose(frame->embeddings, alone_b->embeddings.narrow(0, 8, 8), 1e-10, 1e-12))
        << preset;
  }
}

TEST(EncoderTest, BadInputIsNamed) {
  EncoderConfig c = SmallConfig("qwen2-vl");
  auto w = Weights(c);
  auto pixels = torch::zeros({20, 1176}, torch::kDouble);
  auto r =
      Encode(c, w, pixels, torch::tensor({1, 4, 4}, torch::kLong).view({1, 3}), Recompute::kNone);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("covers 16 patches"), std::string::npos);
  r = Encode(c, w, torch::zeros({16, 1000}), torch::tensor({1, 4, 4}).view({1, 3}),
             Recompute::kNone);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("[patches, 1176]"), std::string::npos);
  std::vector<at::Tensor> fewer(w.begin(), w.end() - 1);
  r = Encode(c, fewer, pixels, torch::tensor({1, 4, 5}).view({1, 3}), Recompute::kNone);
  ASSERT_FALSE(r.ok());
  w[3] = torch::zeros({5});
  r = Encode(c, w, pixels, torch::tensor({1, 4, 5}).view({1, 3}), Recompute::kNone);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'blocks.0.norm2.weight'"), std::string::npos)
      << r.status().message();
}

// The same encoder on a CUDA device gives the CPU's embeddings and gradients (bf16 and fp32 run
// the same ATen code there); skipped without one.
TEST(EncoderGpu, MatchesTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  EncoderConfig c = SmallConfig("qwen2.5-vl");
  torch::manual_seed(4);
  std::vector<at::Tensor> cpu, gpu;
  for (const at::Tensor& w : Weights(c)) {
    cpu.push_back(w.detach().to(torch::kFloat).requires_grad_(true));
    gpu.push_back(cpu.back().detach().to(torch::kCUDA).requires_grad_(true));
  }
  auto grid = torch::tensor({1, 24, 20, 1, 4, 6}, torch::kLong).view({2, 3});
  auto pixels = torch::randn({504, 1176});
  for (Recompute mode : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    auto a = Encode(c, cpu, pixels, grid, mode);
    auto b = Encode(c, gpu, pixels.to(torch::kCUDA), grid, mode);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(torch::allclose(a->embeddings, b->embeddings.cpu(), 1e-3, 1e-4));
    auto ga = torch::autograd::grad({a->embeddings.sum()}, cpu);
    auto gb = torch::autograd::grad({b->embeddings.sum()}, gpu);
    for (size_t i = 0; i < ga.size(); ++i) {
      EXPECT_TRUE(torch::allclose(ga[i], gb[i].cpu(), 1e-3, 1e-4)) << i;
    }
  }
}

}  // namespace
}  // namespace mmpt::vision
