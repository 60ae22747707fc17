#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/cost/calibration.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/presets.h"
#include "mmpt/cost/sample_table.h"

namespace mmpt::cost {
namespace {

TEST(PresetsTest, EveryShippedPresetLoads) {
  for (const char* kind : {"vision", "llm", "hardware"}) {
    auto names = ListPresets(kind);
    EXPECT_FALSE(names.empty()) << kind;
    for (const std::string& name : names) {
      Status status;
      if (std::string_view(kind) == "vision") status = LoadVisionPreset(name).status();
      if (std::string_view(kind) == "llm") status = LoadLlmPreset(name).status();
      if (std::string_view(kind) == "hardware") status = LoadHardwarePreset(name).status();
      EXPECT_TRUE(status.ok()) << kind << "/" << name << ": " << status.ToString();
    }
  }
  EXPECT_EQ(
      ListPresets("vision"),
      (std::vector<std::string>{"internvit-300m-448", "qwen2-vl", "qwen2.5-omni", "qwen2.5-vl",
                                "qwen3-omni", "qwen3-vl", "qwen3-vl-utils", "siglip-so400m-384"}));
}

// Qwen2.5-Omni's vision tower is Qwen2.5-VL's: the same images, tokens and FLOPs; only the
// M-RoPE time scale of video differs (the thinker's position_id_per_seconds).
TEST(PresetsTest, Qwen25OmniSeesAsQwen25VlOnItsOwnTimeScale) {
  auto omni = LoadVisionPreset("qwen2.5-omni");
  auto vl = LoadVisionPreset("qwen2.5-vl");
  ASSERT_TRUE(omni.ok() && vl.ok()) << omni.status().ToString() << vl.status().ToString();
  EXPECT_EQ(omni->tokens_per_second, 25.0);
  EXPECT_EQ(vl->tokens_per_second, 2.0);
  auto a = CostImage(*omni, 700, 1000, 3584);
  auto b = CostImage(*vl, 700, 1000, 3584);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->llm_tokens, b->llm_tokens);
  EXPECT_EQ(a->train_flops, b->train_flops);
}

TEST(PresetsTest, Qwen3VlUtilsIsQwen3VlUnderQwenVlUtilsImageRule) {
  auto hf = LoadVisionPreset("qwen3-vl");
  auto utils = LoadVisionPreset("qwen3-vl-utils");
  ASSERT_TRUE(hf.ok() && utils.ok()) << hf.status().ToString() << utils.status().ToString();
  // The variant names its base and restates only the smallest image: 4 tokens of 32² pixels
  // (qwen-vl-utils) against the Hugging Face processor's shortest_edge 65536.
  EXPECT_EQ(utils->name, "qwen3-vl-utils");
  EXPECT_EQ(hf->min_pixels, 65536u);
  EXPECT_EQ(utils->min_pixels, 4096u);
  EXPECT_EQ(utils->max_pixels, hf->max_pixels);
  EXPECT_EQ(utils->patch_size, 16u);
  EXPECT_EQ(utils->hidden, hf->hidden);
  EXPECT_EQ(utils->layers, hf->layers);
  EXPECT_EQ(utils->full_attention_layers, hf->full_attention_layers);
  // A 100×100 icon: the processor scales it up to 256×256 (64 tokens), qwen-vl-utils keeps
  // it at 96×96 (9 tokens).
  auto big = CostImage(*hf, 100, 100, 4096);
  auto small = CostImage(*utils, 100, 100, 4096);
  ASSERT_TRUE(big.ok() && small.ok());
  EXPECT_EQ(big->llm_tokens, 64u);
  EXPECT_EQ(small->llm_tokens, 9u);
  auto orphan = ParseVisionPreset(R"({"name":"v","base":"qwen9-vl","resolution":{}})", "v.json");
  ASSERT_FALSE(orphan.ok());
  EXPECT_EQ(orphan.status().code(), StatusCode::kNotFound);
  EXPECT_NE(orphan.status().ToString().find("v.json: base"), std::string::npos)
      << orphan.status().ToString();
}

TEST(PresetsTest, VideoResizeRule) {
  // Every video reference resizes with torchvision; Pillow's rule is a preset field away.
  for (const char* name : {"qwen2.5-vl", "qwen3-vl", "qwen3-vl-utils"}) {
    auto rule = VideoRuleOf(*LoadVisionPreset(name));
    ASSERT_TRUE(rule.ok()) << name;
    EXPECT_EQ(rule->resize, media::BicubicRule::kTorchvision) << name;
  }
  // The resize alone: the budget stays per_frame.
  auto pillow = ParseVisionPreset(
      R"({"name":"v","base":"qwen2.5-vl","resolution":{"video":{"resize":"pillow"}}})", "v.json");
  ASSERT_TRUE(pillow.ok()) << pillow.status().ToString();
  EXPECT_EQ(VideoRuleOf(*pillow)->resize, media::BicubicRule::kPillow);
  EXPECT_EQ(pillow->video_budget, media::VideoBudget::kPerFrame);
  auto bad = ParseVisionPreset(
      R"({"name":"v","base":"qwen2.5-vl","resolution":{"video":{"budget":"per_frame",
          "resize":"lanczos"}}})",
      "v.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("lanczos"), std::string::npos);
}

TEST(PresetsTest, TheOmniPresetsTakeAGridStepsSecondsFromTheAskedFps) {
  // 97 frames at 10 fps: 18 sampled (1.86 fps). Qwen2.5-VL's processor is handed that rate;
  // the Omni processors divide the temporal patch by their fps argument, 2.0.
  const double want[] = {2 / (18 / 9.7), 1.0, 1.0};
  int k = 0;
  for (const char* name : {"qwen2.5-vl", "qwen2.5-omni", "qwen3-omni"}) {
    auto rule = VideoRuleOf(*LoadVisionPreset(name));
    ASSERT_TRUE(rule.ok()) << name;
    auto sampling = media::SampleVideo(97, 10.0, 84, 112, *rule);
    ASSERT_TRUE(sampling.ok()) << name;
    EXPECT_EQ(sampling->frame_indices.size(), 18u) << name;
    EXPECT_NEAR(sampling->SecondsPerGridStep(2), want[k++], 1e-9) << name;
  }
  auto bad = ParseVisionPreset(
      R"({"name":"v","base":"qwen2.5-vl","resolution":{"video":{"grid_seconds":"frames"}}})",
      "v.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("grid_seconds"), std::string::npos);
}

TEST(PresetsTest, UnknownPresetNamesTheKnownOnes) {
  auto v = LoadVisionPreset("qwen9-vl");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
  EXPECT_NE(v.status().message().find("qwen2.5-vl"), std::string::npos);
  EXPECT_FALSE(LoadLlmPreset("../vision/qwen2-vl").ok());
}

TEST(PresetsTest, BadPresetFieldsAreNamed) {
  auto bad = ParseLlmPreset(R"({"name":"x","hidden":8,"layers":2,"heads":4,"kv_heads":3,
      "head_dim":2,"vocab":10,"ffn":16})",
                            "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("kv_heads"), std::string::npos);
  EXPECT_EQ(ParseHardwarePreset("[1,2]", "h.json").status().code(), StatusCode::kCorrupt);
  auto neg =
      ParseHardwarePreset(R"({"name":"h","bf16_flops":1e15,"mfu":1.5,"vision_mfu":0.3})", "h.json");
  EXPECT_NE(neg.status().message().find("mfu"), std::string::npos);
  auto rule =
      ParseVisionPreset(R"({"name":"v","resolution":{"rule":"magic"},"encoder":{}})", "v.json");
  EXPECT_NE(rule.status().message().find("magic"), std::string::npos);
}

TEST(VisionCostTest, QwenTokensFollowSmartResize) {
  auto q25 = LoadVisionPreset("qwen2.5-vl");
  ASSERT_TRUE(q25.ok());
  // 640x480 → 644x476 → 23 × 17 merged tokens = 391; patches 4× that.
  auto cost = CostImage(*q25, 480, 640, 2048);
  ASSERT_TRUE(cost.ok());
  EXPECT_EQ(cost->llm_tokens, 391u);
  EXPECT_EQ(cost->patches, 1564u);
  EXPECT_EQ(cost->resized_width, 644u);
  // Qwen3-VL: factor 32 → 640x480 stays 640x480 = 20 × 15 = 300 tokens, 1200 patches.
  auto q3 = LoadVisionPreset("qwen3-vl");
  ASSERT_TRUE(q3.ok());
  auto cost3 = CostImage(*q3, 480, 640, 2048);
  ASSERT_TRUE(cost3.ok());
  EXPECT_EQ(cost3->llm_tokens, 300u);
  EXPECT_EQ(cost3->patches, 1200u);
  EXPECT_FALSE(CostImage(*q25, 480, 0, 2048).ok());
}

TEST(VisionCostTest, FixedAndTiledRules) {
  auto siglip = LoadVisionPreset("siglip-so400m-384");
  ASSERT_TRUE(siglip.ok());
  for (auto [w, h] : {std::pair{640u, 480u}, std::pair{50u, 2000u}}) {
    auto c = CostImage(*siglip, h, w, 3584);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->llm_tokens, 729u);  // 27 × 27 whatever the size
  }
  auto intern = LoadVisionPreset("internvit-300m-448");
  ASSERT_TRUE(intern.ok());
  // Square image → 1 tile, no thumbnail: 256 tokens.
  auto square = CostImage(*intern, 448, 448, 2048);
  ASSERT_TRUE(square.ok());
  EXPECT_EQ(square->tiles, 1u);
  EXPECT_EQ(square->llm_tokens, 256u);
  // 2:1 image 1792x896 → 2x1 grid (ratio 2) wins over e.g. 4x2 tie? Ratio 2 is matched first by
  // (2,1); the later (4,2) ties and wins because the image covers > half of 8 tiles' pixels.
  auto wide = CostImage(*intern, 896, 1792, 2048);
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->resized_width, 4u * 448);
  EXPECT_EQ(wide->resized_height, 2u * 448);
  EXPECT_EQ(wide->tiles, 9u);  // 8 tiles + thumbnail
  EXPECT_EQ(wide->llm_tokens, 9u * 256);
  // A small 2:1 image keeps the first (smallest) matching grid.
  auto small = CostImage(*intern, 100, 200, 2048);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->tiles, 3u);  // 2x1 + thumbnail
}

TEST(VisionCostTest, WindowAttentionMakesBigImagesCheaperThanFullAttention) {
  auto q2 = LoadVisionPreset("qwen2-vl");
  auto q25 = LoadVisionPreset("qwen2.5-vl");
  ASSERT_TRUE(q2.ok() && q25.ok());
  // Doubling each side quadruples patches: full attention grows faster than 4×.
  auto small2 = CostImage(*q2, 448, 448, 3584), big2 = CostImage(*q2, 1792, 1792, 3584);
  auto small25 = CostImage(*q25, 448, 448, 3584), big25 = CostImage(*q25, 1792, 1792, 3584);
  ASSERT_TRUE(small2.ok() && big2.ok() && small25.ok() && big25.ok());
  EXPECT_EQ(big2->patches, 16 * small2->patches);
  double growth2 = big2->train_flops / small2->train_flops;
  double growth25 = big25->train_flops / small25->train_flops;
  EXPECT_GT(growth2, 16.0);
  EXPECT_GT(growth25, 16.0);
  EXPECT_LT(growth25, growth2);  // only 4 of 32 layers are quadratic
}

// Qwen3-VL's encoder FLOPs, written out from the preset's numbers: every block attends over the
// whole frame (no windows) and the three DeepStack mergers cost what the final merger costs.
TEST(VisionCostTest, Qwen3VlFlopsFollowThePreset) {
  auto q3 = LoadVisionPreset("qwen3-vl");
  ASSERT_TRUE(q3.ok()) << q3.status().ToString();
  EXPECT_EQ(q3->deepstack_layers, (std::vector<uint32_t>{8, 16, 24}));
  EXPECT_EQ(q3->position_embeddings, 2304u);
  EXPECT_TRUE(q3->patch_bias);
  EXPECT_EQ(q3->activation, "gelu_pytorch_tanh");
  const double n = 1200, h = 1152, mlp = 4304, merged = 300, m = 4608, llm = 4096;
  const double merger = 2 * merged * m * (m + llm);
  const double forward = 27 * (2 * n * 4 * h * h + 2 * n * 2 * h * mlp + 4 * n * n * h) +
                         2 * n * (3 * 2 * 16 * 16) * h + 4 * merger;
  auto image = CostImage(*q3, 480, 640, 4096);  // 640x480 stays: 40 × 30 patches
  ASSERT_TRUE(image.ok());
  ASSERT_EQ(image->patches, 1200u);
  EXPECT_NEAR(image->train_flops / (3 * forward), 1.0, 1e-12);
  VisionConfig plain = *q3;
  plain.deepstack_layers.clear();
  auto without = CostImage(plain, 480, 640, 4096);
  ASSERT_TRUE(without.ok());
  EXPECT_NEAR((image->train_flops - without->train_flops) / (3 * 3 * merger), 1.0, 1e-9);
  // A video's temporal steps attend each to itself: grid_t passes of one frame, never
  // (grid_t · h · w)².
  auto video = CostVideo(*q3, 640, 480, 120, 30000, 4096);
  ASSERT_TRUE(video.ok()) << video.status().ToString();
  ASSERT_GT(video->grid_t, 1u);
  auto frame = CostImage(*q3, video->resized_height, video->resized_width, 4096);
  ASSERT_TRUE(frame.ok());
  ASSERT_EQ(frame->patches * video->grid_t, video->patches);
  EXPECT_NEAR(video->train_flops / (video->grid_t * frame->train_flops), 1.0, 1e-12);
}

TEST(PresetsTest, BadQwen3FieldsAreNamed) {
  const std::string head =
      R"({"name":"v","resolution":{"rule":"smart_resize","patch_size":16,"spatial_merge":2,)"
      R"("temporal_patch":2,"max_pixels":1000000},"encoder":{"hidden":64,"layers":4,"heads":4,)"
      R"("mlp_hidden":96,)";
  for (auto [field, body] : {std::pair{"deepstack_layers", R"("deepstack_layers":[1,4]})"},
                             std::pair{"deepstack_layers", R"("deepstack_layers":[2,1]})"},
                             std::pair{"deepstack_layers", R"("deepstack_layers":3})"},
                             std::pair{"position_embeddings", R"("position_embeddings":2300})"},
                             std::pair{"activation", R"("activation":"gelu_fast"})"}}) {
    auto v = ParseVisionPreset(head + body + "}", "v.json");
    ASSERT_FALSE(v.ok()) << body;
    EXPECT_NE(v.status().message().find(field), std::string::npos) << v.status().message();
  }
  auto ok =
      ParseVisionPreset(head + R"("deepstack_layers":[1,3],"position_embeddings":64}})", "v.json");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->deepstack_layers, (std::vector<uint32_t>{1, 3}));
}

TEST(LlmCostTest, MoeCountsActiveParametersAndAttentionIsQuadratic) {
  auto moe = LoadLlmPreset("qwen3-30b-a3b");
  auto dense = LoadLlmPreset("qwen2.5-7b");
  ASSERT_TRUE(moe.ok() && dense.ok());
  // 6 × active parameters per token: ~3.3B active for 30B-A3B, ~7.6B for the 7B model.
  double moe_params = moe->LinearTrainFlopsPerToken() / 6.0;
  double dense_params = dense->LinearTrainFlopsPerToken() / 6.0;
  EXPECT_GT(moe_params, 2.9e9);
  EXPECT_LT(moe_params, 3.6e9);
  EXPECT_GT(dense_params, 7.0e9);
  EXPECT_LT(dense_params, 8.0e9);
  double a1 = moe->AttentionTrainFlops(4096), a2 = moe->AttentionTrainFlops(8192);
  EXPECT_NEAR(a2 / a1, 4.0, 0.01);
}

TEST(CostModelTest, OneLongDocumentCostsMoreThanManyShortOnes) {
  auto model = CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  ASSERT_TRUE(model.ok());
  double one_long = model->SequenceLlmSeconds(8192);
  double many_short = 32 * model->SequenceLlmSeconds(256);
  EXPECT_GT(one_long, many_short * 1.2);
  EXPECT_DOUBLE_EQ(model->PaddingLlmSeconds(0), 0.0);
  EXPECT_GT(model->PaddingLlmSeconds(100), 0.0);
  EXPECT_FALSE(CostModel::FromPresets("qwen2.5-vl", "nope", "b200").ok());
}

// A table's bytes are checked in constant time when opened; a damaged row is named when read
// (CostSample checks it), and Validate reads every row and the checksum.
TEST(SampleTableTest, DamagedBytesAreNamedWhereTheyAreRead) {
  SampleTableBuilder builder;
  const uint32_t a = builder.AddSource("a");
  VideoItem video{.width = 64, .height = 48, .frames = 30, .fps_milli = 30000};
  ASSERT_TRUE(builder.Add(a, 5, {}).ok());
  ASSERT_TRUE(builder.Add(a, 7, {}, {}, {{&video, 1}, {}}).ok());
  auto table = std::move(builder).Finish();
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->video_rows.size(), 1u);  // sparse: only the row that has one
  EXPECT_TRUE(table->VideosOf(0).empty());
  EXPECT_EQ(table->VideosOf(1).size(), 1u);
  EXPECT_TRUE(table->Validate().ok());
  auto model = CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  ASSERT_TRUE(model.ok());
  // Sample 0's text tokens (the section after the 128-byte header, the 8 bytes of the name
  // and source_begin's 16) set to 0: a sample of zero length.
  auto bytes =
      std::make_shared<std::vector<std::byte>>(table->bytes().begin(), table->bytes().end());
  std::memset(bytes->data() + 128 + 8 + 16, 0, 4);
  auto damaged = SampleTable::FromBytes(bytes, *bytes, "t.plan");
  ASSERT_TRUE(damaged.ok()) << damaged.status().ToString();
  auto cost = CostSample(*damaged, *model, 0);
  ASSERT_FALSE(cost.ok());
  EXPECT_EQ(cost.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(cost.status().message().find("t.plan: source 'a' sample 0: sample has zero length"),
            std::string::npos)
      << cost.status().ToString();
  EXPECT_TRUE(CostSample(*damaged, *model, 1).ok());
  EXPECT_FALSE(damaged->Validate().ok());
  // Cut short, or another file: refused when opened, naming it.
  auto cut = SampleTable::FromBytes(bytes, std::span(*bytes).first(bytes->size() - 8), "t.plan");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("t.plan: truncated"), std::string::npos);
}

TEST(SampleTableTest, GroupsBySourceAndCostsEveryImage) {
  SampleTableBuilder builder;
  uint32_t a = builder.AddSource("a"), b = builder.AddSource("b");
  ImageSize img[] = {{640, 480}, {100, 100}};
  ASSERT_TRUE(builder.Add(b, 10, img).ok());
  ASSERT_TRUE(builder.Add(a, 20, {}).ok());
  ASSERT_TRUE(builder.Add(b, 30, std::span(img, 1)).ok());
  EXPECT_FALSE(builder.Add(a, 0, {}).ok());  // zero length
  ImageSize zero[] = {{0, 5}};
  EXPECT_FALSE(builder.Add(a, 5, zero).ok());
  EXPECT_FALSE(builder.Add(7, 5, {}).ok());
  auto table = std::move(builder).Finish();
  ASSERT_TRUE(table.ok());
  ASSERT_EQ(table->num_samples(), 3u);
  EXPECT_EQ(table->source_begin, (std::vector<uint64_t>{0, 1, 3}));
  EXPECT_EQ(std::vector<uint32_t>(table->text_tokens.begin(), table->text_tokens.end()),
            (std::vector<uint32_t>{20, 10, 30}));
  EXPECT_EQ(table->ImagesOf(1).size(), 2u);
  EXPECT_EQ(table->ImagesOf(2)[0].width, 640u);
  EXPECT_EQ(table->SourceOfRow(0), 0u);
  EXPECT_EQ(table->SourceOfRow(2), 1u);

  auto model = CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  ASSERT_TRUE(model.ok());
  auto costed = CostSamples(*table, *model);
  ASSERT_TRUE(costed.ok());
  EXPECT_EQ(costed->image_tokens[0], 0u);
  EXPECT_EQ(costed->image_tokens[2], 391u);
  EXPECT_GT(costed->vision_seconds[1], costed->vision_seconds[2]);
  EXPECT_EQ(SampleTableBuilder().Finish().status().code(), StatusCode::kInvalidArgument);
}

// The streaming writer gives the builder's bytes for the same rows (source by source), holds
// to its counts, and leaves no file unless it finishes.
TEST(SampleTableTest, WriterWritesTheBuildersBytesAndOnlyWhenFinished) {
  const std::string dir = test_util::FreshDir("table_writer");
  std::mt19937 rng(5);
  const std::vector<std::string> names = {"a", "bb", "ccc"};
  SampleTableBuilder builder;
  for (const std::string& name : names) builder.AddSource(name);
  struct Row {
    uint32_t source, text;
    std::vector<ImageSize> images;
    std::vector<uint32_t> positions;
    std::vector<VideoItem> videos;
    std::vector<AudioItem> audios;
  };
  std::vector<Row> rows;
  TableCounts counts;
  for (uint32_t source = 0; source < names.size(); ++source) {
    for (int k = 0; k < 40; ++k) {
      Row row{source, 1 + static_cast<uint32_t>(rng() % 300), {}, {}, {}, {}};
      auto side = [&] { return static_cast<uint32_t>(1 + rng() % 900); };
      for (uint32_t i = rng() % 4; i > 0; --i) row.images.push_back({side(), side()});
      if (rng() % 2) {  // given; else spread
        for (size_t i = 0; i < row.images.size(); ++i) {
          row.positions.push_back(static_cast<uint32_t>(row.text * i / 4));
        }
      }
      if (rng() % 5 == 0) row.videos.push_back({64, 48, 30, 30000, row.text, 0, 0, 0, 0});
      if (rng() % 7 == 0) row.audios.push_back({.samples = 16000, .text_position = row.text});
      counts.Add(row.images.size(), row.videos.size(), row.audios.size());
      rows.push_back(row);
    }
  }
  // The builder takes them in any order; the writer source by source.
  std::vector<size_t> shuffled(rows.size());
  std::iota(shuffled.begin(), shuffled.end(), 0);
  std::stable_sort(shuffled.begin(), shuffled.end(), [&](size_t x, size_t y) {
    return rows[x].source > rows[y].source;  // sources reversed, each in order
  });
  for (size_t r : shuffled) {
    const Row& row = rows[r];
    ASSERT_TRUE(
        builder.Add(row.source, row.text, row.images, row.positions, {row.videos, row.audios})
            .ok());
  }
  auto built = std::move(builder).Finish();
  ASSERT_TRUE(built.ok());

  const std::string path = dir + "/t.plan";
  auto writer = SampleTableWriter::Create(path, names, counts);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  EXPECT_EQ(writer->Add(1, 5, {}).code(), StatusCode::kOk);
  EXPECT_EQ(writer->Add(0, 5, {}).code(), StatusCode::kInvalidArgument);  // a source back
  writer = SampleTableWriter::Create(path, names, counts);                // the first one dropped
  ASSERT_TRUE(writer.ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  for (const Row& row : rows) {
    ASSERT_TRUE(
        writer->Add(row.source, row.text, row.images, row.positions, {row.videos, row.audios})
            .ok());
  }
  EXPECT_EQ(writer->Add(2, 5, {}).code(), StatusCode::kInvalidArgument);  // past the counts
  auto written = std::move(*writer).Finish();
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  auto file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok());
  const auto a = built->bytes(), b = file->bytes();
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  EXPECT_EQ(written->bytes, a.size());
  EXPECT_EQ(written->checksum, built->data_checksum());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);  // no temporary

  // Short of its counts: refused, and neither the table nor a temporary is left.
  const std::string short_path = dir + "/short.plan";
  auto short_writer = SampleTableWriter::Create(short_path, names, counts);
  ASSERT_TRUE(short_writer.ok());
  ASSERT_TRUE(short_writer->Add(0, 5, {}).ok());
  EXPECT_EQ(std::move(*short_writer).Finish().status().code(), StatusCode::kInvalidArgument);
  short_writer = Status::Internal("dropped");
  EXPECT_FALSE(std::filesystem::exists(short_path));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
}

TEST(CostModelTest, AttentionPairWeightFromLlmAndHardware) {
  auto model = CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const double w = model->AttentionPairWeight();
  // 3·(2·2·48·4096) per pair over 3·(forward linear FLOPs per token ≈ 2 × 3.3e9 active),
  // scaled by the hardware's linear over attention utilization.
  const LlmConfig& llm = model->llm();
  const HardwareConfig& hw = model->hardware();
  EXPECT_NEAR(w * llm.LinearTrainFlopsPerToken() * 10.0 * 11.0 / 2.0 * hw.mfu / hw.AttentionMfu(),
              llm.AttentionTrainFlops(10), 1e-6 * llm.AttentionTrainFlops(10));
  EXPECT_NEAR(model->SequenceLlmSeconds(10) - model->SequenceLlmSeconds(9),
              model->SequenceLlmSeconds(1) * (1 + w * 10) / (1 + w),
              1e-9 * model->SequenceLlmSeconds(1));
  // Attention at half the linear layers' utilization weighs twice as much.
  HardwareConfig half = hw;
  half.attention_mfu = hw.AttentionMfu() / 2;
  CostModel slow(model->vision(), llm, half);
  EXPECT_DOUBLE_EQ(slow.AttentionPairWeight(), 2 * w);
}

}  // namespace
}  // namespace mmpt::cost

#include "mmpt/cost/text_estimate.h"

namespace mmpt::cost {
namespace {

TEST(TextEstimateTest, CountsWordsDigitsPunctuationAndLongWords) {
  EXPECT_EQ(EstimateTextTokens(""), 0u);
  EXPECT_EQ(EstimateTextTokens("A dog runs."), 4u);           // A, ␣dog, ␣runs, .
  EXPECT_EQ(EstimateTextTokens("in 2017"), 6u);               // in, ␣, 2, 0, 1, 7
  EXPECT_EQ(EstimateTextTokens("internationalization"), 4u);  // 20 letters → ⌈20/5⌉
  EXPECT_EQ(EstimateTextTokens("héllo"), 3u);                 // h, é, llo
  EXPECT_EQ(EstimateTextTokens("!!!"), 1u);
  // Close to 1.3 tokens per English word on prose.
  std::string prose =
      "Two people walking down a city street next to tall buildings while holding umbrellas "
      "in the rain, with cars parked along the curb.";
  uint32_t tokens = EstimateTextTokens(prose);
  EXPECT_GE(tokens, 24u);
  EXPECT_LE(tokens, 32u);
}

}  // namespace
}  // namespace mmpt::cost

namespace mmpt::cost {
namespace {

TEST(Calibration, RecoversTheFactorsThatMadeTheSeconds) {
  // Seconds made from known factors: encoder 2.5, HF encoder 5, linear 1.6, attention 8.
  std::vector<TimedBatch> batches;
  for (int i = 0; i < 12; ++i) {
    TimedBatch b;
    b.peak_vision_seconds = 0.1 + 0.05 * i;
    b.peak_linear_seconds = 0.2 + 0.01 * (i % 3);
    b.peak_attention_seconds = 0.01 * (1 + (i * 7) % 5);
    b.hf_encoder = i % 4 == 3;
    b.vision_seconds = (b.hf_encoder ? 5.0 : 2.5) * b.peak_vision_seconds;
    b.llm_seconds = 1.6 * b.peak_linear_seconds + 8.0 * b.peak_attention_seconds;
    batches.push_back(b);
  }
  auto fit = Calibrate(batches);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_NEAR(fit->vision, 2.5, 1e-9);
  EXPECT_NEAR(fit->vision_hf, 5.0, 1e-9);
  EXPECT_NEAR(fit->linear, 1.6, 1e-6);
  EXPECT_NEAR(fit->attention, 8.0, 1e-5);
  const HardwareConfig config = CalibratedHardware(*fit, 123456789.0, "dev", "by a test");
  EXPECT_EQ(config.bf16_flops, 1.235e8);
  EXPECT_EQ(config.mfu, 0.625);
  EXPECT_EQ(config.vision_mfu, 0.4);
  EXPECT_EQ(config.attention_mfu, 0.125);
  EXPECT_EQ(config.native_encoder_factor, 2.0);
  auto parsed = ParseHardwarePreset(HardwarePresetJson(config, "a device"), "test");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->mfu, config.mfu);
  EXPECT_EQ(parsed->attention_mfu, config.attention_mfu);
  EXPECT_EQ(parsed->native_encoder_factor, 2.0);
  EXPECT_EQ(parsed->measured, "by a test");
}

TEST(Calibration, AlikeBatchesShareOneFactorAndBadOnesAreRefused) {
  // Every batch has the same linear/attention mix: the two cannot be told apart.
  std::vector<TimedBatch> alike(4, TimedBatch{1.0, 3.0, 0.5, 1.0, 0.5, false});
  auto fit = Calibrate(alike);
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit->linear, 2.0, 1e-12);
  EXPECT_EQ(fit->linear, fit->attention);
  EXPECT_EQ(fit->vision_hf, 0.0);
  EXPECT_EQ(CalibratedHardware(*fit, 1e9, "d", "").native_encoder_factor, 0.0);
  EXPECT_EQ(Calibrate({}).status().code(), StatusCode::kInvalidArgument);
  alike[2].llm_seconds = -1;
  Status bad = Calibrate(alike).status();
  EXPECT_NE(bad.ToString().find("batch 2"), std::string::npos) << bad.ToString();
}

TEST(Calibration, WritesThePresetFileThePresetReaderReads) {
  const std::string dir = test_util::FreshDir("calibration_presets");
  std::filesystem::create_directories(dir + "/hardware");
  const HardwareConfig config = CalibratedHardware({2.0, 0, 4.0, 4.0}, 1e12, "mine", "here");
  ASSERT_TRUE(WriteHardwarePreset(dir, config, "a device").ok());
  auto text = ReadFileToString(dir + "/hardware/mine.json");
  ASSERT_TRUE(text.ok());
  auto parsed = ParseHardwarePreset(*text, "mine.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->vision_mfu, 0.5);
  EXPECT_EQ(parsed->mfu, 0.25);
  HardwareConfig escaping = config;
  escaping.name = "../mine";
  EXPECT_EQ(WriteHardwarePreset(dir, escaping, "").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmpt::cost
