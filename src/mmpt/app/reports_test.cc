#include "mmpt/app/reports.h"

#include <gtest/gtest.h>

#include <vector>

namespace mmpt::app {
namespace {

TEST(ReportsTest, InspectTextNamesEachModalityAndJsonCarriesDurations) {
  store::InspectReport report;
  report.dir = "ds";
  store::SourceSummary source;
  source.name = "clips";
  std::vector<uint64_t> video_ms = {2000, 4000, 3000};
  source.video_ms_each = store::Summarize(video_ms);
  source.videos.total = 3;
  source.tokens.count = 5;
  std::vector<uint64_t> audio_ms = {1500, 2500};
  source.audio_ms_each = store::Summarize(audio_ms);
  source.audios.total = 2;
  report.sources.push_back(source);
  const std::string text = RenderInspectText(report);
  EXPECT_NE(text.find("source clips: 5 samples, 0 images, 3 videos (9.0 s)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("seconds per video"), std::string::npos) << text;
  const auto json = nlohmann::json::parse(RenderInspectJson(report));
  EXPECT_EQ(json["sources"][0]["audio_duration_ms"]["total"], 4000);
}

TEST(ReportsTest, ComparisonShowsBothPlannersAndTheirRatio) {
  plan::Comparison comparison;
  comparison.vanilla.tokens_per_second = 100;
  comparison.mmpt.tokens_per_second = 150;
  comparison.vanilla.efficiency = 0.8;
  comparison.mmpt.efficiency = 0.995;
  comparison.sources = {{"shard", 3000, 0.75}, {"small", 1000, 0.25}};
  const std::string text = FormatComparison(comparison);
  EXPECT_NE(text.find("vanilla"), std::string::npos) << text;
  EXPECT_NE(text.find("  small                                       1000 samples    0.2500\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("99.50%"), std::string::npos) << text;
  const auto json = nlohmann::json::parse(ComparisonJson(comparison));
  EXPECT_DOUBLE_EQ(json["throughput_speedup"].get<double>(), 1.5);
  EXPECT_EQ(json["sources"][0]["name"], "shard");
  EXPECT_DOUBLE_EQ(json["sources"][0]["weight"].get<double>(), 0.75);
}

TEST(ReportsTest, AblationRowsAndPoliciesReadTheSameInTextAndJson) {
  sim::Ablation ablation;
  ablation.cp = 2;
  ablation.rows.push_back({"vanilla", 2.0, 1000, 1.0, 1.0, true, 1.5, 1.6});
  ablation.rows.push_back({"+ global packing", 1.0, 2000, 2.0, 2.0, true, 0.9, 0.95});
  ablation.policies.push_back({cp::VisionPolicy::kCost, 1.05, 1.1, 1.2, 2100, {}});
  ablation.parameters = "  seq_len = 8192\n";
  const std::string text = FormatAblation(ablation);
  EXPECT_NE(text.find("+ global packing"), std::string::npos) << text;
  EXPECT_NE(text.find("200.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("CP 2 vision load per pack"), std::string::npos) << text;
  EXPECT_NE(text.find("seq_len = 8192"), std::string::npos) << text;
  EXPECT_NE(text.find("1.250"), std::string::npos) << text;  // vanilla's step ÷ atomic bound
  // Vanilla's buffers: a note below 3 turnovers, none after.
  EXPECT_EQ(text.find("note: each vanilla rank"), std::string::npos) << text;
  ablation.vanilla_buffer = 1024;
  ablation.vanilla_buffer_turnover = 0.4;
  EXPECT_NE(FormatAblation(ablation).find("trained on only 0.4 of its 1024-sample"),
            std::string::npos);
  ablation.vanilla_buffer_turnover = 3.2;
  EXPECT_EQ(FormatAblation(ablation).find("note: each vanilla rank"), std::string::npos);
  const nlohmann::json json = AblationToJson(ablation);
  EXPECT_DOUBLE_EQ(json["rows"][0]["atomic_lower_bound_seconds"].get<double>(), 1.6);
  EXPECT_EQ(json["cp"], 2);
  ASSERT_EQ(json["rows"].size(), 2u);
  EXPECT_EQ(json["rows"][1]["stage"], "+ global packing");
  EXPECT_EQ(json["policies"][0]["policy"], "cost");
}

}  // namespace
}  // namespace mmpt::app
