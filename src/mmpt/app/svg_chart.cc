#include "mmpt/app/svg_chart.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace mmpt::app {
namespace {

constexpr double kLeft = 64, kRight = 16, kTop = 32, kBottom = 48;

// A "nice" step (1, 2 or 5 × 10^k) giving about `ticks` ticks up to `max`.
double NiceStep(double max, int ticks) {
  if (!(max > 0)) return 1;
  const double raw = max / ticks, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * magnitude) return m * magnitude;
  }
  return 10 * magnitude;
}

std::string FormatTick(double value) {
  if (value != 0 && (std::fabs(value) >= 1e5 || std::fabs(value) < 1e-2)) {
    return fmt::format("{:.1e}", value);
  }
  return fmt::format("{:g}", value);
}

std::string SvgOpen(uint32_t width, uint32_t height, std::string_view title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"11\">"
      "<text x=\"{2}\" y=\"18\" font-size=\"13\" font-weight=\"bold\">{3}</text>",
      width, height, kLeft, EscapeXml(title));
}

// Y axis with gridlines from 0 to `top`; returns the markup.
std::string YAxis(double top, double step, double plot_w, double plot_h, std::string_view label) {
  std::string out;
  for (double v = 0; v <= top * (1 + 1e-9); v += step) {
    const double y = kTop + plot_h - v / top * plot_h;
    out += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>",
        kLeft, kLeft + plot_w, y, kLeft - 4, y + 4, FormatTick(v));
  }
  out += fmt::format(
      "<text transform=\"translate(12,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
      kTop + plot_h / 2, EscapeXml(label));
  return out;
}

}  // namespace

std::string EscapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string RenderBarChart(const BarChart& chart) {
  const double plot_w = chart.width - kLeft - kRight, plot_h = chart.height - kTop - kBottom;
  const size_t n = chart.categories.size(), k = chart.series.size();
  double max = chart.reference > 0 ? chart.reference : 0;
  for (size_t c = 0; c < n; ++c) {
    double stack = 0;
    for (const BarSeries& s : chart.series) {
      const double v = c < s.values.size() ? std::max(0.0, s.values[c]) : 0.0;
      stack = chart.stacked ? stack + v : std::max(stack, v);
    }
    max = std::max(max, stack);
  }
  const double step = NiceStep(max, 5), top = std::max(step, std::ceil(max / step) * step);
  std::string out = SvgOpen(chart.width, chart.height, chart.title);
  out += YAxis(top, step, plot_w, plot_h, chart.y_label);
  const double group_w = n > 0 ? plot_w / n : plot_w;
  const double bar_w = chart.stacked || k == 0 ? group_w * 0.7 : group_w * 0.8 / k;
  for (size_t c = 0; c < n; ++c) {
    double base = 0;
    for (size_t s = 0; s < k; ++s) {
      const BarSeries& series = chart.series[s];
      const double v = c < series.values.size() ? std::max(0.0, series.values[c]) : 0.0;
      const double h = v / top * plot_h;
      const double x =
          kLeft + c * group_w + (chart.stacked ? group_w * 0.15 : group_w * 0.1 + s * bar_w);
      const double y = kTop + plot_h - (chart.stacked ? base / top * plot_h : 0) - h;
      out += fmt::format(
          "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
          "fill=\"{}\"><title>{}: {}</title></rect>",
          x, y, std::max(bar_w - 1, 1.0), h, EscapeXml(series.color),
          EscapeXml(chart.categories[c]), fmt::format("{} {:.4g}", EscapeXml(series.name), v));
      if (chart.stacked) base += v;
    }
    // Label every category when they fit, else about 16 of them.
    const size_t every = std::max<size_t>(1, n / 16);
    if (c % every == 0) {
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
                         kLeft + (c + 0.5) * group_w, kTop + plot_h + 14,
                         EscapeXml(chart.categories[c]));
    }
  }
  if (chart.reference >= 0) {
    const double y = kTop + plot_h - chart.reference / top * plot_h;
    out += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\" "
        "stroke-dasharray=\"4 3\"/><text x=\"{1}\" y=\"{3:.1f}\" text-anchor=\"end\">{4}</text>",
        kLeft, kLeft + plot_w, y, y - 3, EscapeXml(chart.reference_label));
  }
  // Legend along the bottom.
  double lx = kLeft;
  for (const BarSeries& s : chart.series) {
    out += fmt::format(
        "<rect x=\"{0:.1f}\" y=\"{1:.1f}\" width=\"10\" height=\"10\" fill=\"{2}\"/>"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\">{5}</text>",
        lx, chart.height - 16.0, EscapeXml(s.color), lx + 14, chart.height - 7.0,
        EscapeXml(s.name));
    lx += 24 + 7.0 * s.name.size();
  }
  out += "</svg>";
  return out;
}

Histogram MakeHistogram(std::string title, std::string x_label, const std::vector<double>& values,
                        uint32_t bins, bool log_scale) {
  Histogram h;
  h.title = std::move(title);
  h.x_label = std::move(x_label);
  bins = std::max<uint32_t>(bins, 1);
  if (values.empty()) return h;
  double lo = *std::min_element(values.begin(), values.end());
  double hi = *std::max_element(values.begin(), values.end());
  log_scale = log_scale && lo > 0;
  auto map = [&](double v) { return log_scale ? std::log(v) : v; };
  auto unmap = [&](double v) { return log_scale ? std::exp(v) : v; };
  double a = map(lo), b = map(hi);
  if (b <= a) b = a + 1;
  h.edges.resize(bins + 1);
  for (uint32_t i = 0; i <= bins; ++i) h.edges[i] = unmap(a + (b - a) * i / bins);
  h.counts.assign(bins, 0);
  for (double v : values) {
    const auto bin = static_cast<int64_t>((map(v) - a) / (b - a) * bins);
    ++h.counts[std::clamp<int64_t>(bin, 0, bins - 1)];
  }
  return h;
}

std::string RenderHistogram(const Histogram& histogram) {
  const double plot_w = histogram.width - kLeft - kRight;
  const double plot_h = histogram.height - kTop - kBottom;
  uint64_t max = 0;
  for (uint64_t c : histogram.counts) max = std::max(max, c);
  const double step = NiceStep(static_cast<double>(max), 4);
  const double top = std::max(step, std::ceil(max / step) * step);
  std::string out = SvgOpen(histogram.width, histogram.height, histogram.title);
  out += YAxis(top, step, plot_w, plot_h, "count");
  const size_t n = histogram.counts.size();
  for (size_t i = 0; i < n; ++i) {
    const double h = histogram.counts[i] / top * plot_h, w = plot_w / n;
    out += fmt::format(
        "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
        "fill=\"{}\"><title>[{:.4g}, {:.4g}): {}</title></rect>",
        kLeft + i * w, kTop + plot_h - h, std::max(w - 1, 0.5), h, EscapeXml(histogram.color),
        histogram.edges[i], histogram.edges[i + 1], histogram.counts[i]);
  }
  for (size_t i = 0; i <= n; i += std::max<size_t>(1, n / 5)) {
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
                       kLeft + i * plot_w / std::max<size_t>(n, 1), kTop + plot_h + 14,
                       FormatTick(std::round(histogram.edges[i] * 100) / 100));
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text></svg>",
                     kLeft + plot_w / 2, histogram.height - 10.0, EscapeXml(histogram.x_label));
  return out;
}

std::string RenderHeatMap(const HeatMap& map) {
  const double plot_w = map.width - kLeft - kRight, plot_h = map.height - kTop - kBottom;
  double max = map.max_value;
  if (max <= 0) {
    for (double v : map.values) max = std::max(max, v);
  }
  if (max <= 0) max = 1;
  std::string out = SvgOpen(map.width, map.height, map.title);
  const double cw = plot_w / std::max<uint32_t>(map.columns, 1);
  const double ch = plot_h / std::max<uint32_t>(map.rows, 1);
  for (uint32_t r = 0; r < map.rows; ++r) {
    for (uint32_t c = 0; c < map.columns; ++c) {
      const double v = map.values[size_t{r} * map.columns + c];
      out += fmt::format(
          "<rect class=\"cell\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
          "fill=\"{}\" fill-opacity=\"{:.3f}\"><title>{} {}, {} {}: {:.4g}</title></rect>",
          kLeft + c * cw, kTop + r * ch, cw, ch, EscapeXml(map.color),
          std::clamp(v / max, 0.0, 1.0), EscapeXml(map.row_label), r, EscapeXml(map.column_label),
          c, v);
    }
  }
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"#999\"/>"
      "<text transform=\"translate(12,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{} (scale 0 to {:.3g})</text></svg>",
      kLeft, kTop, plot_w, plot_h, kTop + plot_h / 2, EscapeXml(map.row_label), kLeft + plot_w / 2,
      map.height - 16.0, EscapeXml(map.column_label), max);
  return out;
}

}  // namespace mmpt::app
