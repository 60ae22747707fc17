#pragma once

#include <string>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::app {

/// One section of an HTML report: a heading, a paragraph, figures (inline SVG from
/// svg_chart.h), an optional table and an optional preformatted block.
struct ReportSection {
  std::string id{};  // HTML id of the section (letters, digits, '-')
  std::string title{};
  std::string intro{};                      // plain text; escaped when rendered
  std::vector<std::string> figures{};       // inline <svg> markup, rendered as is
  std::vector<std::string> table_header{};  // column names; no table when empty
  std::vector<std::vector<std::string>> table_rows{};
  std::string preformatted{};  // plain text in a <pre>; escaped
};

/// A self-contained HTML report: inline CSS and SVG, no scripts, no external assets.
struct Report {
  std::string title{};
  std::string subtitle{};
  std::vector<ReportSection> sections{};
};

/// Render `report` as one HTML document.
std::string RenderReportHtml(const Report& report);

/// Render and write `report` to `path` atomically. Errors: IOError naming the path.
Status WriteReport(const Report& report, const std::string& path);

}  // namespace mmpt::app
