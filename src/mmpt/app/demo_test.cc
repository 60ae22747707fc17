#include "mmpt/app/demo.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include <gtest/gtest.h>

#include "mmpt/app/chromium_test_util.h"
#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/corpora/real_corpora.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/sim/corpus_ablation.h"

namespace mmpt::app {

// Moved here from the sim module; its names are used unqualified.
using namespace mmpt::sim;
namespace {

namespace fs = std::filesystem;

TEST(DemoTest, BuiltinProfileIsAMixOfFourSources) {
  auto a = BuiltinProfileCorpus(2000, 7), b = BuiltinProfileCorpus(2000, 7);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->num_sources(), 4u);
  EXPECT_EQ(a->source_names[0], "coco");
  EXPECT_EQ(a->source_size(0), 2000u);
  EXPECT_TRUE(std::ranges::equal(a->bytes(), b->bytes()));  // seeded
  EXPECT_EQ(a->num_images(), b->num_images());
  EXPECT_GT(a->num_images(), 2000u);  // captions plus documents' images
}

// The seed's table (../shared/seed/README.md) has each optimization help, in order. On the
// mixed real-data corpus, with the printed default parameters, every cumulative stage of both
// seed configurations must raise throughput over the stage before it.
TEST(DemoTest, SeedConfigurationsReproduceTheSeedsShape) {
  auto table = corpora::PretrainingMixCorpus();
  ASSERT_TRUE(table.ok()) << "needs ../shared/data/real: " << table.status().ToString();
  auto model = cost::CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  ASSERT_TRUE(model.ok());
  const std::vector<double> weights(std::begin(corpora::kPretrainingMixWeights),
                                    std::end(corpora::kPretrainingMixWeights));
  for (const DemoConfiguration& config : SeedConfigurations(weights)) {
    AblationOptions options;
    options.steps = 2;
    auto ablation = RunCorpusAblation(*table, *model, config.planner, options);
    ASSERT_TRUE(ablation.ok()) << ablation.status().ToString();
    size_t cumulative = 0;
    for (const AblationRow& row : ablation->rows) {
      if (!row.cumulative) continue;
      ++cumulative;
      if (row.stage != "vanilla") {
        EXPECT_GT(row.vs_previous, 1.0) << config.name << ": " << row.stage;
      }
    }
    // vanilla, + global packing, + reordering, + vision DP at CP > 1; b200 has no measured
    // native-encoder factor, so no native-encoder stage.
    EXPECT_EQ(cumulative, config.planner.layout.cp > 1 ? 4u : 3u) << config.name;
    if (config.planner.layout.cp > 1) {
      ASSERT_EQ(ablation->policies.size(), 3u);
      // By cost beats by count, which beats naive, on the CP group's worst vision load.
      EXPECT_LT(ablation->policies[2].mean_imbalance, ablation->policies[1].mean_imbalance);
      EXPECT_LT(ablation->policies[1].mean_imbalance, ablation->policies[0].mean_imbalance);
    }
  }
}

// Under qwen3_vl each video is written as timestamped temporal groups, each its own vision
// item: the section counts more group items than videos, and mmpt's plan places them.
TEST(DemoTest, Qwen3VlSectionPlansVideosAsTimestampedGroups) {
  const fs::path dir = test_util::FreshDir("demo_qwen3");
  auto section = Qwen3VlSection(dir.string(), DemoOptions{});
  ASSERT_TRUE(section.ok()) << section.status().ToString();
  EXPECT_EQ(section->id, "qwen3-vl");
  const std::string& text = section->preformatted;
  EXPECT_NE(text.find("vision qwen3-vl"), std::string::npos) << text;
  EXPECT_NE(text.find("chat template qwen3_vl"), std::string::npos) << text;
  std::smatch synth, placed;
  ASSERT_TRUE(std::regex_search(
      text, synth,
      std::regex(R"((\d+) caption pairs \((\d+) images\), (\d+) videos \(\d+ s\) written as (\d+) )"
                 R"(timestamped groups)")))
      << text;
  EXPECT_EQ(std::stoull(synth[1]), kQwen3VlImages);
  EXPECT_EQ(std::stoull(synth[3]), kQwen3VlVideos);
  const uint64_t groups = std::stoull(synth[4]);
  EXPECT_GT(groups, 2 * kQwen3VlVideos);  // 1–10 s at 2 frames a second, 2 frames a group
  ASSERT_TRUE(std::regex_search(
      text, placed,
      std::regex(R"(plan \(3 steps\) placed (\d+) samples: (\d+) images and (\d+) video group )"
                 R"(items)")))
      << text;
  const uint64_t samples = std::stoull(placed[1]), images = std::stoull(placed[2]);
  const uint64_t group_items = std::stoull(placed[3]);
  EXPECT_GT(images, 0u);
  EXPECT_GT(group_items, 0u);
  // The same plan as the table's mmpt column.
  std::smatch table;
  ASSERT_TRUE(std::regex_search(text, table, std::regex(R"(samples placed +\d+ +(\d+)\n)")));
  EXPECT_EQ(std::stoull(table[1]), samples);
  // A caption pair holds one image and a video sample one video, of several groups.
  ASSERT_LT(images, samples);
  EXPECT_GT(group_items, samples - images);
  EXPECT_LE(group_items, 3 * groups);  // a step holds each sample once
  fs::remove_all(dir);
}

TEST(DemoSlow, DemoWritesAReportThatRendersInChromium) {
  const fs::path dir = test_util::FreshDir("demo");
  fs::create_directories(dir / "profile");
  fs::create_directories(dir / "profile2");
  DemoOptions options;
  options.report_path = (dir / "report.html").string();
  options.work_dir = (dir / "work").string();
  auto text = RunDemo(options);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("+ vision DP when CP (by cost, mmpt)"), std::string::npos);
  // The omni corpus is prepared with every modality and planned with the audio encoder.
  EXPECT_NE(text->find("omni corpus: synthesized: 1000 samples"), std::string::npos);
  EXPECT_NE(text->find("audio imbalance max (mean)"), std::string::npos);
  EXPECT_NE(text->find("video tokens"), std::string::npos);
  // The Qwen3-VL corpus is prepared with videos as timestamped groups, and the plan places them.
  EXPECT_NE(text->find("qwen3-vl corpus: synthesized: 600 caption pairs (600 images), 150 videos"),
            std::string::npos);
  EXPECT_TRUE(std::regex_search(*text, std::regex(R"(placed \d+ samples: [1-9]\d* images and )"
                                                  R"([1-9]\d* video group items)")));
  // b200 has no measured native-encoder factor: the parameters say so.
  EXPECT_NE(text->find("native_encoder_factor"), std::string::npos);

  auto dom = testing_browser::DumpDom(options.report_path, (dir / "profile").string());
  ASSERT_TRUE(dom.ok()) << dom.status().ToString();
  for (const char* id :
       {"ablation", "corpus", "load", "cp", "prepared", "omni", "qwen3-vl", "parameters"}) {
    EXPECT_NE(dom->find(fmt::format("<section id=\"{}\">", id)), std::string::npos) << id;
  }
  size_t charts = 0;
  for (size_t at = dom->find("<svg"); at != std::string::npos; at = dom->find("<svg", at + 1)) {
    ++charts;
  }
  EXPECT_GE(charts, 10u);
  const std::string png = (dir / "shot.png").string();
  ASSERT_TRUE(
      testing_browser::Screenshot(options.report_path, (dir / "profile2").string(), png, 1100, 2400)
          .ok());
  auto ink = testing_browser::InkFraction(png);
  ASSERT_TRUE(ink.ok()) << ink.status().ToString();
  EXPECT_GT(*ink, 0.05) << "report screenshot is nearly blank";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mmpt::app
