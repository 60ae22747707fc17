#include "mmpt/app/report_html.h"

#include <cctype>

#include <fmt/format.h>

#include "mmpt/app/svg_chart.h"
#include "mmpt/core/mapped_file.h"

namespace mmpt::app {

std::string RenderReportHtml(const Report& report) {
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>{0}</title><style>"
      "body{{font-family:sans-serif;margin:24px auto;max-width:1000px;color:#222}}"
      "h1{{font-size:22px}}h2{{font-size:17px;border-bottom:1px solid #ccc;padding-bottom:4px}}"
      "p.sub{{color:#555}}figure{{display:inline-block;margin:6px}}"
      "table{{border-collapse:collapse;margin:8px 0}}"
      "td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left}}td.n{{text-align:right}}"
      "pre{{background:#f6f6f6;padding:8px;font-size:12px;overflow-x:auto}}"
      "</style></head><body>\n<h1>{0}</h1>\n<p class=\"sub\">{1}</p>\n",
      EscapeXml(report.title), EscapeXml(report.subtitle));
  out += "<nav><ul>";
  for (const ReportSection& s : report.sections) {
    out += fmt::format("<li><a href=\"#{}\">{}</a></li>", EscapeXml(s.id), EscapeXml(s.title));
  }
  out += "</ul></nav>\n";
  for (const ReportSection& s : report.sections) {
    out += fmt::format("<section id=\"{}\"><h2>{}</h2>\n", EscapeXml(s.id), EscapeXml(s.title));
    if (!s.intro.empty()) out += fmt::format("<p>{}</p>\n", EscapeXml(s.intro));
    if (!s.table_header.empty()) {
      out += "<table><tr>";
      for (const std::string& h : s.table_header) out += fmt::format("<th>{}</th>", EscapeXml(h));
      out += "</tr>";
      for (const auto& row : s.table_rows) {
        out += "<tr>";
        for (const std::string& cell : row) {
          // Numbers align right, words left.
          auto digit = [&](size_t i) {
            return i < cell.size() && std::isdigit(static_cast<unsigned char>(cell[i]));
          };
          const bool number = digit(0) || ((cell[0] == '+' || cell[0] == '-') && digit(1));
          out += fmt::format("<td{}>{}</td>", number ? " class=\"n\"" : "", EscapeXml(cell));
        }
        out += "</tr>";
      }
      out += "</table>\n";
    }
    for (const std::string& figure : s.figures) out += "<figure>" + figure + "</figure>\n";
    if (!s.preformatted.empty()) out += fmt::format("<pre>{}</pre>\n", EscapeXml(s.preformatted));
    out += "</section>\n";
  }
  out += "</body></html>\n";
  return out;
}

Status WriteReport(const Report& report, const std::string& path) {
  return WriteFileAtomic(path, RenderReportHtml(report));
}

}  // namespace mmpt::app
