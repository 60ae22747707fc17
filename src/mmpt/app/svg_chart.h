#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mmpt::app {

/// Escape `text` for HTML/SVG text content and attribute values.
std::string EscapeXml(std::string_view text);

/// One labelled series of a bar chart.
struct BarSeries {
  std::string name{};
  std::string color{};           // CSS colour, e.g. "#4e79a7"
  std::vector<double> values{};  // one per category
};

/// A bar chart: one group of bars per category, series side by side, or stacked.
struct BarChart {
  std::string title{};
  std::string y_label{};
  std::vector<std::string> categories{};
  std::vector<BarSeries> series{};
  bool stacked = false;
  double reference = -1;  // draw a dashed horizontal line here when ≥ 0 (e.g. a lower bound)
  std::string reference_label{};
  uint32_t width = 720, height = 260;
};

/// Render `chart` as a self-contained inline <svg> element (no scripts, no external assets).
std::string RenderBarChart(const BarChart& chart);

/// A histogram from pre-binned counts: bins [edges[i], edges[i+1]).
struct Histogram {
  std::string title{};
  std::string x_label{};
  std::string color = "#4e79a7";
  std::vector<double> edges{};     // bins + 1, increasing
  std::vector<uint64_t> counts{};  // bins
  uint32_t width = 460, height = 240;
};

/// Bin `values` into `bins` equal-width bins between their min and max (log-spaced when
/// `log_scale` and every value > 0).
Histogram MakeHistogram(std::string title, std::string x_label, const std::vector<double>& values,
                        uint32_t bins, bool log_scale = false);

/// Render `histogram` as an inline <svg> element.
std::string RenderHistogram(const Histogram& histogram);

/// A heat map: rows × columns of non-negative values, shaded from white to `color`.
struct HeatMap {
  std::string title{};
  std::string row_label{};
  std::string column_label{};
  uint32_t rows = 0, columns = 0;
  std::vector<double> values{};  // row-major, rows × columns
  double max_value = 0;          // top of the colour scale; 0: the largest value
  std::string color = "#e15759";
  uint32_t width = 460, height = 240;
};

/// Render `map` as an inline <svg> element.
std::string RenderHeatMap(const HeatMap& map);

}  // namespace mmpt::app
