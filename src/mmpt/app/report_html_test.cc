#include "mmpt/app/report_html.h"

#include <gtest/gtest.h>

#include "mmpt/app/svg_chart.h"

namespace mmpt::app {
namespace {

size_t Occurrences(const std::string& text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(SvgChartTest, BarChartHasOneRectPerValue) {
  BarChart chart{.title = "load",
                 .y_label = "s",
                 .categories = {"a", "b", "c"},
                 .series = {{"vision", "#f00", {1, 2, 3}}, {"llm", "#00f", {3, 2, 1}}},
                 .stacked = true,
                 .reference = 4,
                 .reference_label = "bound"};
  const std::string svg = RenderBarChart(chart);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(Occurrences(svg, "class=\"bar\""), 6u);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_EQ(Occurrences(svg, "<svg"), Occurrences(svg, "</svg>"));
}

TEST(SvgChartTest, HistogramCountsEveryValue) {
  std::vector<double> values = {1, 2, 2, 3, 10, 100, 1000};
  Histogram h = MakeHistogram("tokens", "tokens", values, 4, /*log_scale=*/true);
  ASSERT_EQ(h.counts.size(), 4u);
  uint64_t total = 0;
  for (uint64_t c : h.counts) total += c;
  EXPECT_EQ(total, values.size());
  EXPECT_DOUBLE_EQ(h.edges.front(), 1.0);
  EXPECT_NEAR(h.edges.back(), 1000.0, 1e-9);
  EXPECT_EQ(Occurrences(RenderHistogram(h), "class=\"bar\""), 4u);
  // Equal values still make a valid histogram.
  Histogram flat = MakeHistogram("flat", "x", {5, 5, 5}, 3);
  EXPECT_EQ(flat.counts[0], 3u);
}

TEST(SvgChartTest, HeatMapShadesByValue) {
  HeatMap map{.title = "t",
              .row_label = "rank",
              .column_label = "micro-step",
              .rows = 2,
              .columns = 2,
              .values = {0, 1, 2, 4}};
  const std::string svg = RenderHeatMap(map);
  EXPECT_EQ(Occurrences(svg, "class=\"cell\""), 4u);
  EXPECT_NE(svg.find("fill-opacity=\"1.000\""), std::string::npos);
  EXPECT_NE(svg.find("fill-opacity=\"0.000\""), std::string::npos);
}

TEST(ReportHtmlTest, EscapesTextAndKeepsFigures) {
  Report report;
  report.title = "a <b> & c";
  report.subtitle = "sub";
  ReportSection section;
  section.id = "s1";
  section.title = "Section";
  section.intro = "x < y";
  section.figures.push_back("<svg></svg>");
  section.table_header = {"stage", "relative"};
  section.table_rows = {{"vanilla", "1.00"}, {"+ reordering", "+5.2%"}};
  section.preformatted = "p = 1 <2>";
  report.sections.push_back(section);
  const std::string html = RenderReportHtml(report);
  EXPECT_NE(html.find("<title>a &lt;b&gt; &amp; c</title>"), std::string::npos);
  EXPECT_NE(html.find("<p>x &lt; y</p>"), std::string::npos);
  EXPECT_NE(html.find("<figure><svg></svg></figure>"), std::string::npos);
  EXPECT_NE(html.find("<td>vanilla</td><td class=\"n\">1.00</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>+ reordering</td><td class=\"n\">+5.2%</td>"), std::string::npos);
  EXPECT_NE(html.find("p = 1 &lt;2&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), html.find("http://www.w3.org"));  // no external asset
}

}  // namespace
}  // namespace mmpt::app
