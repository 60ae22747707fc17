#include "mmpt/app/demo_report.h"

#include <gtest/gtest.h>

#include "mmpt/sim/test_plans_test_util.h"

namespace mmpt::app {

// Moved here from the sim module; its names are used unqualified.
using namespace mmpt::sim;
namespace {

using testing_plans::MakePlan;
using testing_plans::PackSpec;

size_t Count(const std::string& text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

ConfigAblation TestAblation() {
  plan::Layout layout{
      .dp = 2, .cp = 2, .ep = 2, .ga = 2, .seq_len = 2048, .sync = plan::SyncModel::kMicrostep};
  PackSpec heavy{{1024, 1024}, {{600, 6}, {100, 1}}, 7, 4};
  PackSpec light{{1024, 1024}, {{100, 1}}, 1, 4};
  PlanSource source = [&]() -> Result<plan::StepPlan> {
    return MakePlan(layout, {heavy, light, heavy, light});
  };
  AblationOptions options;
  options.steps = 2;
  auto ablation = RunAblation(
      source,
      [&](cp::VisionPolicy policy) -> Result<plan::StepPlan> {
        return MakePlan(layout, {heavy, light, heavy, light}, policy);
      },
      options);
  EXPECT_TRUE(ablation.ok());
  return ConfigAblation{"test config", layout, *ablation};
}

TEST(DemoReportTest, SectionsCarryTheirFigures) {
  ConfigAblation config = TestAblation();
  ReportSection ablation = AblationSection({config});
  EXPECT_EQ(ablation.table_rows.size(), config.ablation.rows.size());
  EXPECT_EQ(ablation.figures.size(), 1u);
  EXPECT_EQ(Count(ablation.figures[0], "class=\"bar\""), config.ablation.rows.size());

  ReportSection load = LoadSection(config);
  ASSERT_EQ(load.figures.size(), 4u);
  EXPECT_EQ(Count(load.figures[0], "class=\"cell\""), 4u);  // 2 ranks × 2 micro-steps
  EXPECT_EQ(Count(load.figures[2], "class=\"bar\""), 4u);   // 2 ranks × (vision, LLM)

  ReportSection cp = CpSection(config);
  EXPECT_EQ(cp.table_rows.size(), 3u);
  EXPECT_EQ(cp.figures.size(), 4u);
  EXPECT_NE(ParametersSection({config}).preformatted.find("cp_llm_overhead"), std::string::npos);
}

TEST(DemoReportTest, CorpusSectionCountsSourcesAndImages) {
  cost::SampleTableBuilder builder;
  const uint32_t coco = builder.AddSource("coco"), text = builder.AddSource("text");
  const std::vector<cost::ImageSize> one = {{640, 480}};
  ASSERT_TRUE(builder.Add(coco, 20, one).ok());
  ASSERT_TRUE(builder.Add(coco, 30, one).ok());
  ASSERT_TRUE(builder.Add(text, 500, {}).ok());
  auto table = std::move(builder).Finish();
  ASSERT_TRUE(table.ok());
  auto model = cost::CostModel::FromPresets("qwen2.5-vl", "qwen3-30b-a3b", "b200");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto costs = cost::CostSamples(*table, *model);
  ASSERT_TRUE(costs.ok());
  ReportSection s = CorpusSection(*table, *costs, "qwen2.5-vl");
  ASSERT_EQ(s.table_rows.size(), 2u);
  EXPECT_EQ(s.table_rows[0][0], "coco");
  EXPECT_EQ(s.table_rows[0][2], "2");
  EXPECT_EQ(s.figures.size(), 3u);
}

}  // namespace
}  // namespace mmpt::app
