#include "mmpt/app/reports.h"

#include <algorithm>

#include <fmt/format.h>

namespace mmpt::app {

namespace {

std::string Row(std::string_view label, const store::Distribution& d) {
  return fmt::format("  {:<20} {:>12} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n", label, d.total, d.min,
                     d.p10, d.p50, d.p90, d.p99, d.max);
}

// A row of durations kept in milliseconds, shown in seconds.
std::string SecondsRow(std::string_view label, const store::Distribution& d) {
  auto s = [](uint64_t ms) { return static_cast<double>(ms) / 1000; };
  return fmt::format("  {:<20} {:>12.1f} {:>8.1f} {:>8.1f} {:>8.1f} {:>8.1f} {:>8.1f} {:>8.1f}\n",
                     label, s(d.total), s(d.min), s(d.p10), s(d.p50), s(d.p90), s(d.p99), s(d.max));
}

std::string DistributionBars(const store::Distribution& d) {
  static constexpr const char* kBlocks[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  std::string out;
  uint64_t peak =
      d.histogram.empty() ? 0 : *std::max_element(d.histogram.begin(), d.histogram.end());
  if (peak == 0) return out;
  for (size_t b = 0; b < d.histogram.size(); ++b) {
    if (d.histogram[b] == 0) continue;
    uint64_t lo = b == 0 ? 0 : uint64_t{1} << (b - 1);
    uint64_t hi = b == 0 ? 0 : (uint64_t{1} << b) - 1;
    size_t eighths = static_cast<size_t>(d.histogram[b] * 40 * 8 / peak);
    std::string bar;
    for (size_t i = 0; i < eighths / 8; ++i) bar += "█";
    bar += kBlocks[eighths % 8];
    out += fmt::format("  {:>7}-{:<7} {:>9} {}\n", lo, hi, d.histogram[b], bar);
  }
  return out;
}

nlohmann::json ToJson(const store::Distribution& d) {
  return {{"count", d.count}, {"total", d.total}, {"min", d.min},
          {"p10", d.p10},     {"p50", d.p50},     {"p90", d.p90},
          {"p99", d.p99},     {"max", d.max},     {"histogram_log2", d.histogram}};
}

}  // namespace

std::string RenderInspectText(const store::InspectReport& report) {
  std::string out =
      fmt::format("dataset {}  (tokenizer {}, vision {}, audio {}, chat template {})\n", report.dir,
                  report.tokenizer, report.vision, report.audio, report.chat_template);
  for (const store::SourceSummary& s : report.sources) {
    const bool av = s.videos.total > 0 || s.audios.total > 0;
    out += fmt::format("\nsource {}: {} samples, {} images{} ({} metadata-only media), {} shards\n",
                       s.name, s.tokens.count, s.images.total,
                       av ? fmt::format(", {} videos ({:.1f} s), {} audio ({:.1f} s)",
                                        s.videos.total, s.video_ms_each.total / 1000.0,
                                        s.audios.total, s.audio_ms_each.total / 1000.0)
                          : std::string(),
                       s.metadata_only_media, s.shards);
    out += fmt::format("  {:<20} {:>12} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "per sample",
                       "total", "min", "p10", "p50", "p90", "p99", "max");
    out += Row("text tokens", s.text_tokens);
    out += Row("images", s.images);
    out += Row("image tokens", s.image_tokens);
    if (av) {
      out += Row("videos", s.videos);
      out += Row("video tokens", s.video_tokens);
      out += Row("audio items", s.audios);
      out += Row("audio tokens", s.audio_tokens);
    }
    out += Row("all tokens", s.tokens);
    out += Row("tokens per image", s.image_tokens_each);
    if (av) {
      out += SecondsRow("seconds per video", s.video_ms_each);
      out += SecondsRow("seconds per audio", s.audio_ms_each);
    }
    out += "  histogram of all tokens per sample:\n";
    out += DistributionBars(s.tokens);
  }
  return out;
}

std::string RenderInspectJson(const store::InspectReport& report) {
  nlohmann::json doc;
  doc["dir"] = report.dir;
  doc["tokenizer"] = report.tokenizer;
  doc["vision"] = report.vision;
  doc["audio"] = report.audio;
  doc["chat_template"] = report.chat_template;
  doc["sources"] = nlohmann::json::array();
  for (const store::SourceSummary& s : report.sources) {
    doc["sources"].push_back({{"name", s.name},
                              {"shards", s.shards},
                              {"samples", s.tokens.count},
                              {"metadata_only_media", s.metadata_only_media},
                              {"text_tokens", ToJson(s.text_tokens)},
                              {"images", ToJson(s.images)},
                              {"image_tokens", ToJson(s.image_tokens)},
                              {"tokens", ToJson(s.tokens)},
                              {"tokens_per_image", ToJson(s.image_tokens_each)},
                              {"videos", ToJson(s.videos)},
                              {"audios", ToJson(s.audios)},
                              {"video_duration_ms", ToJson(s.video_ms_each)},
                              {"audio_duration_ms", ToJson(s.audio_ms_each)},
                              {"video_tokens", ToJson(s.video_tokens)},
                              {"audio_tokens", ToJson(s.audio_tokens)}});
  }
  return doc.dump(1) + "\n";
}

}  // namespace mmpt::app
