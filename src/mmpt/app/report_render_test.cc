// Renders a report in headless Chromium. Suite *Slow: `make test` runs it, the unit tier does not.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "mmpt/app/chromium_test_util.h"
#include "mmpt/app/report_html.h"
#include "mmpt/app/svg_chart.h"
#include "mmpt/core/mapped_file.h"
#include "mmpt/core/temp_dir_test_util.h"

namespace mmpt::app {
namespace {

namespace fs = std::filesystem;

TEST(ReportRenderSlow, ChartsRenderInChromium) {
  const fs::path dir = test_util::FreshDir("report");
  fs::create_directories(dir / "profile");
  Report report;
  report.title = "mmpt report";
  ReportSection section;
  section.id = "ablation";
  section.title = "Ablation";
  BarChart chart{.title = "throughput",
                 .y_label = "relative",
                 .categories = {"a", "b", "c"},
                 .series = {{"x", "#4e79a7", {1.0, 1.2, 1.5}}}};
  section.figures.push_back(RenderBarChart(chart));
  HeatMap map{.title = "load",
              .row_label = "rank",
              .column_label = "micro-step",
              .rows = 4,
              .columns = 8,
              .values = std::vector<double>(32, 1.0)};
  section.figures.push_back(RenderHeatMap(map));
  report.sections.push_back(section);
  const std::string html = (dir / "report.html").string();
  ASSERT_TRUE(WriteReport(report, html).ok());

  auto dom = testing_browser::DumpDom(html, (dir / "profile").string());
  ASSERT_TRUE(dom.ok()) << dom.status().ToString();
  EXPECT_NE(dom->find("<section id=\"ablation\">"), std::string::npos);
  EXPECT_NE(dom->find("class=\"bar\""), std::string::npos);
  EXPECT_NE(dom->find("class=\"cell\""), std::string::npos);

  const std::string png = (dir / "shot.png").string();
  fs::create_directories(dir / "profile2");
  ASSERT_TRUE(testing_browser::Screenshot(html, (dir / "profile2").string(), png, 1000, 800).ok());
  auto ink = testing_browser::InkFraction(png);
  ASSERT_TRUE(ink.ok()) << ink.status().ToString();
  EXPECT_GT(*ink, 0.02) << "screenshot is blank";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mmpt::app
