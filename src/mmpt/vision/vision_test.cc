// The encoder's description, checkpoint reader and index maps (no libtorch).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <numeric>
#include <set>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/cost/presets.h"
#include "mmpt/vision/checkpoint.h"
#include "mmpt/vision/encoder_config.h"
#include "mmpt/vision/layout.h"
#include "mmpt/vision/safetensors.h"
#include "mmpt/vision/safetensors_test_util.h"

namespace mmpt::vision {
namespace {

namespace fs = std::filesystem;

EncoderConfig Config(std::string_view preset, uint32_t layers = 4) {
  auto p = cost::LoadVisionPreset(preset);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  p->layers = layers;
  std::erase_if(p->full_attention_layers, [&](uint32_t l) { return l >= layers; });
  if (p->window_size > 0) p->full_attention_layers = {layers - 1};
  auto c = MakeEncoderConfig(*p, 3584);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

std::span<const std::byte> Span(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

TEST(EncoderConfigTest, PresetsDescribeBothTowers) {
  EncoderConfig v2 = Config("qwen2-vl", 32), v25 = Config("qwen2.5-vl", 32);
  EXPECT_FALSE(v2.rms_norm);
  EXPECT_EQ(v2.tower, Tower::kQwen2Vl);
  EXPECT_EQ(v2.window_merged, 0u);
  EXPECT_TRUE(v25.rms_norm && v25.gated_mlp && v25.tower == Tower::kQwen25Vl);
  EXPECT_EQ(v25.window_merged, 4u);  // 112 px = 4 merged patches of 28 px
  EXPECT_EQ(v25.patch_values(), 1176u);
  // Qwen2-VL: 32 blocks × (4 norm + 4 attention + 4 MLP) + patch + 2 norm + 4 merger.
  EXPECT_EQ(Parameters(v2).size(), 32u * 12 + 1 + 2 + 4);
  // Qwen2.5-VL: 32 × (2 + 4 + 6) + 1 + 1 + 4.
  EXPECT_EQ(Parameters(v25).size(), 32u * 12 + 1 + 1 + 4);
  int64_t elements = 0;
  for (const ParameterSpec& s : Parameters(v25)) {
    elements += std::accumulate(s.shape.begin(), s.shape.end(), int64_t{1}, std::multiplies<>());
  }
  // Qwen2.5-VL-7B's vision tower holds 676.6M parameters with the 3584-wide merger.
  EXPECT_NEAR(elements / 1e6, 676.6, 0.5);
}

TEST(EncoderConfigTest, Qwen3PresetDescribesItsTower) {
  EncoderConfig c = Config("qwen3-vl", 27);
  EXPECT_EQ(c.tower, Tower::kQwen3Vl);
  EXPECT_FALSE(c.rms_norm || c.gated_mlp);
  EXPECT_TRUE(c.patch_bias);
  EXPECT_EQ(c.position_side, 48u);  // 2304 entries
  EXPECT_EQ(c.deepstack_layers, (std::vector<uint32_t>{8, 16, 24}));
  EXPECT_EQ(c.window_merged, 0u);
  EXPECT_EQ(c.patch_values(), 1536u);  // 3 × 2 × 16²
  const auto specs = Parameters(c);
  // Patch weight and bias, position table, 27 × 12, merger 6, three DeepStack mergers of 6.
  ASSERT_EQ(specs.size(), 3u + 27 * 12 + 6 + 3 * 6);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ParameterSpec& s : specs) shapes[s.name] = s.shape;
  EXPECT_EQ(shapes["patch_embed.proj.bias"], (std::vector<int64_t>{1152}));
  EXPECT_EQ(shapes["pos_embed.weight"], (std::vector<int64_t>{2304, 1152}));
  EXPECT_EQ(shapes["blocks.26.mlp.linear_fc1.weight"], (std::vector<int64_t>{4304, 1152}));
  EXPECT_EQ(shapes["blocks.0.norm1.bias"], (std::vector<int64_t>{1152}));
  EXPECT_EQ(shapes["merger.norm.weight"], (std::vector<int64_t>{1152}));  // before the merge
  EXPECT_EQ(shapes["merger.linear_fc2.weight"], (std::vector<int64_t>{3584, 4608}));
  EXPECT_EQ(shapes["deepstack_merger_list.2.norm.bias"], (std::vector<int64_t>{4608}));  // after
  EXPECT_EQ(shapes["deepstack_merger_list.0.linear_fc1.weight"],
            (std::vector<int64_t>{4608, 4608}));
  EXPECT_EQ(shapes.count("merger.ln_q.weight") + shapes.count("blocks.0.mlp.fc1.weight"), 0u);
  // A smaller tower keeps the DeepStack layers below its depth only if asked; one whose layers
  // it lacks is refused by the preset's check.
  auto p = cost::LoadVisionPreset("qwen3-vl");
  ASSERT_TRUE(p.ok());
  p->layers = 4;
  p->full_attention_layers = {0, 1, 2, 3};
  EXPECT_FALSE(MakeEncoderConfig(*p, 3584).ok());
  p->deepstack_layers = {1, 3};
  EXPECT_TRUE(MakeEncoderConfig(*p, 3584).ok());
  // DeepStack mergers are Qwen3-VL's alone.
  auto q2 = cost::LoadVisionPreset("qwen2-vl");
  ASSERT_TRUE(q2.ok());
  q2->deepstack_layers = {1};
  auto refused = MakeEncoderConfig(*q2, 3584);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("DeepStack"), std::string::npos);
}

TEST(EncoderConfigTest, RefusesPresetsItCannotBuild) {
  auto siglip = cost::LoadVisionPreset("siglip-so400m-384");
  ASSERT_TRUE(siglip.ok());
  auto c = MakeEncoderConfig(*siglip, 3584);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("siglip-so400m-384"), std::string::npos);
  EXPECT_FALSE(ParseRecompute("some").ok());
  EXPECT_EQ(*ParseRecompute("selective"), Recompute::kSelective);
}

TEST(SafetensorsTest, ParsesAndRefusesBadBytes) {
  testing::SafetensorsWriter w;
  w.tensors = {{"a", {2, 3}, 1.5f}, {"b", {4}, -2.0f}};
  const std::string bytes = w.Bytes();
  auto t = ParseSafetensors(Span(bytes), "x.safetensors");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].name, "a");
  EXPECT_EQ((*t)[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ((*t)[1].data.size(), 16u);
  float first;
  std::memcpy(&first, (*t)[1].data.data(), 4);
  EXPECT_EQ(first, -2.0f);

  // Every truncation of the file is refused, naming the file.
  for (size_t n : {size_t{0}, size_t{7}, size_t{20}, bytes.size() - 1}) {
    auto cut = ParseSafetensors(Span(bytes.substr(0, n)), "x.safetensors");
    ASSERT_FALSE(cut.ok()) << n;
    EXPECT_EQ(cut.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(cut.status().message().find("x.safetensors"), std::string::npos);
  }
  auto header = [](const std::string& json, size_t data_bytes) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
    return out + json + std::string(data_bytes, '\0');
  };
  const std::pair<std::string, std::string> bad[] = {
      {R"({"t":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", "unknown dtype 'F33'"},
      {R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "4 bytes for 2 F32"},
      {R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", "outside the 4 data bytes"},
      {R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"u":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
       "overlap"},
      {R"([1, 2])", "not a JSON object"},
      {R"({"t":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})",
       "overflows"},
  };
  for (const auto& [json, why] : bad) {
    auto r = ParseSafetensors(Span(header(json, 4)), "y.safetensors");
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().ToString();
  }
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_util::FreshDir(std::string("checkpoint_") +
                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A checkpoint of `config`'s tower under `prefix`, with an LLM tensor beside it.
  std::string Write(const EncoderConfig& config, const std::string& prefix,
                    const std::string& file = "model.safetensors") {
    testing::SafetensorsWriter w;
    for (const ParameterSpec& s : Parameters(config))
      w.tensors.push_back({prefix + s.name, s.shape, 1});
    w.tensors.push_back({"model.embed_tokens.weight", {4, 2}, 0});
    const std::string path = (dir_ / file).string();
    EXPECT_TRUE(WriteFileAtomic(path, w.Bytes()).ok());
    return path;
  }
  fs::path dir_;
};

TEST_F(CheckpointTest, FindsTheTowerUnderEveryPrefix) {
  EncoderConfig c = Config("qwen2.5-vl", 2);
  c.hidden = 8;
  c.heads = 2;
  c.mlp_hidden = 12;
  for (const std::string prefix : {"visual.", "model.visual.", ""}) {
    const std::string path = Write(c, prefix);
    auto ckpt = Checkpoint::Open(prefix.empty() ? path : dir_.string());
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
    if (prefix.empty()) {
      // A bare file with a tensor outside the tower: it is unexpected, not ignored.
      auto m = ckpt->Match(Parameters(c));
      ASSERT_FALSE(m.ok());
      EXPECT_NE(m.status().message().find("unexpected 'model.embed_tokens.weight'"),
                std::string::npos);
      continue;
    }
    auto m = ckpt->Match(Parameters(c));
    ASSERT_TRUE(m.ok()) << prefix << ": " << m.status().ToString();
    EXPECT_EQ((*m)[0]->name, prefix + "patch_embed.proj.weight");
    ASSERT_NE(ckpt->FindVision("merger.mlp.2.weight"), nullptr);
    EXPECT_EQ(ckpt->FindVision("merger.mlp.2.weight")->shape[0], 3584);
  }
}

TEST_F(CheckpointTest, NamesMissingMisshapedAndUnexpectedTensors) {
  EncoderConfig v25 = Config("qwen2.5-vl", 2), v2 = Config("qwen2-vl", 2);
  for (EncoderConfig* c : {&v25, &v2}) {
    c->hidden = 8;
    c->heads = 2;
    c->mlp_hidden = 12;
  }
  Write(v2, "visual.");
  auto ckpt = Checkpoint::Open(dir_.string());
  ASSERT_TRUE(ckpt.ok());
  auto m = ckpt->Match(Parameters(v25));  // a Qwen2-VL checkpoint for a Qwen2.5-VL tower
  ASSERT_FALSE(m.ok());
  const std::string msg = m.status().message();
  EXPECT_NE(msg.find("missing 'blocks.0.mlp.gate_proj.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected 'visual.blocks.0.mlp.fc1.bias'"), std::string::npos) << msg;
  EncoderConfig wider = v2;
  wider.mlp_hidden = 16;
  m = ckpt->Match(Parameters(wider));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(
                "mis-shaped 'visual.blocks.0.mlp.fc1.weight' is [12, 8] where [16, 8] is expected"),
            std::string::npos)
      << m.status().message();

  // A sharded checkpoint through its index: two shards, one of them the tower.
  const std::string shard = Write(v2, "visual.", "part-1.safetensors");
  ASSERT_TRUE(
      WriteFileAtomic((dir_ / "idx.json").string(),
                      R"({"weight_map": {"visual.patch_embed.proj.weight": "part-1.safetensors"}})")
          .ok());
  auto sharded = Checkpoint::Open((dir_ / "idx.json").string());
  ASSERT_TRUE(sharded.ok()) << sharded.status().ToString();
  EXPECT_TRUE(sharded->Match(Parameters(v2)).ok());
  EXPECT_FALSE(Checkpoint::Open((dir_ / "nothing").string()).ok());
}

TEST(LayoutTest, WindowsCoverEveryGroupOnceAndStayInsideTheirFrame) {
  EncoderConfig c = Config("qwen2.5-vl", 2);
  // A frame of 10×6 merge groups (20×12 patches) cuts into 3×2 windows of ≤4×4 groups; a second
  // image of 2 frames, 2×2 groups each.
  const GridThw grids[] = {{1, 20, 12}, {2, 4, 4}};
  auto layout = PlanLayout(c, grids, 240 + 32);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->cu_seqlens, (std::vector<int64_t>{0, 240, 256, 272}));
  std::vector<int64_t> sizes;
  for (size_t i = 1; i < layout->cu_window_seqlens.size(); ++i) {
    sizes.push_back(layout->cu_window_seqlens[i] - layout->cu_window_seqlens[i - 1]);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{64, 32, 64, 32, 32, 16, 16, 16}));
  std::set<int64_t> groups(layout->window_groups.begin(), layout->window_groups.end());
  EXPECT_EQ(groups.size(), 68u);
  EXPECT_EQ(*groups.rbegin(), 67);
  // The first window starts with row 0 of the frame's groups (6 a row), then row 1.
  EXPECT_EQ(std::vector<int64_t>(layout->window_groups.begin(), layout->window_groups.begin() + 5),
            (std::vector<int64_t>{0, 1, 2, 3, 6}));
  // Rotary positions: row 5 is group 1's second patch: patch row 0, column 3.
  EXPECT_EQ(layout->row_h[5], 0);
  EXPECT_EQ(layout->row_w[5], 3);
}

TEST(LayoutTest, RefusesGridsThatDoNotMatchTheRows) {
  EncoderConfig c = Config("qwen2-vl", 2);
  const GridThw odd[] = {{1, 4, 5}};
  auto r = PlanLayout(c, odd, 20);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("image 0"), std::string::npos);
  const GridThw fine[] = {{1, 4, 4}, {1, 2, 2}};
  r = PlanLayout(c, fine, 21);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("covers 20 patches (2 images) but pixel_values has 21 rows"),
            std::string::npos)
      << r.status().message();
  const GridThw zero[] = {{0, 2, 2}};
  EXPECT_FALSE(PlanLayout(c, zero, 0).ok());
  EXPECT_TRUE(PlanLayout(c, {}, 0).ok());
}

}  // namespace
}  // namespace mmpt::vision
