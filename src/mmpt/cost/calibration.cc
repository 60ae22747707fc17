#include "mmpt/cost/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "mmpt/core/mapped_file.h"

namespace mmpt::cost {
namespace {

// A figure to four significant digits, as the preset file holds it.
double FourDigits(double value) { return std::stod(fmt::format("{:.4g}", value)); }

}  // namespace

Result<Calibration> Calibrate(std::span<const TimedBatch> batches) {
  double native[2] = {0, 0}, hf[2] = {0, 0};  // measured, peak
  // The LM's normal equations over (linear, attention), and the sums for one shared factor.
  double aa = 0, ab = 0, bb = 0, ay = 0, by = 0, measured_llm = 0, peak_llm = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const TimedBatch& b = batches[i];
    for (double v : {b.vision_seconds, b.llm_seconds, b.peak_vision_seconds, b.peak_linear_seconds,
                     b.peak_attention_seconds}) {
      if (!(v >= 0) || !std::isfinite(v)) {
        return Status::InvalidArgument("calibration: batch {} has a figure of {}", i, v);
      }
    }
    double* encoder = b.hf_encoder ? hf : native;
    encoder[0] += b.vision_seconds;
    encoder[1] += b.peak_vision_seconds;
    const double a = b.peak_linear_seconds, c = b.peak_attention_seconds, y = b.llm_seconds;
    aa += a * a;
    ab += a * c;
    bb += c * c;
    ay += a * y;
    by += c * y;
    measured_llm += y;
    peak_llm += a + c;
  }
  if (native[1] <= 0) {
    return Status::InvalidArgument(
        "calibration: no batch of the native encoder with encoder work ({} batches)",
        batches.size());
  }
  Calibration fit;
  fit.vision = native[0] / native[1];
  if (hf[1] > 0) fit.vision_hf = hf[0] / hf[1];
  const double det = aa * bb - ab * ab;
  if (det > 1e-12 * aa * bb) {
    fit.linear = (bb * ay - ab * by) / det;
    fit.attention = (aa * by - ab * ay) / det;
  }
  if (std::min(fit.linear, fit.attention) <= 0) {  // too alike to tell apart: one factor
    fit.linear = fit.attention = measured_llm / std::max(peak_llm, 1e-12);
  }
  return fit;
}

HardwareConfig CalibratedHardware(const Calibration& fit, double peak_flops, std::string name,
                                  std::string measured) {
  auto utilization = [](double factor) { return FourDigits(std::min(1.0, 1.0 / factor)); };
  HardwareConfig config;
  config.name = std::move(name);
  config.bf16_flops = FourDigits(peak_flops);
  config.mfu = utilization(fit.linear);
  config.vision_mfu = utilization(fit.vision);
  config.attention_mfu = utilization(fit.attention);
  if (fit.vision_hf > 0) config.native_encoder_factor = FourDigits(fit.vision_hf / fit.vision);
  config.measured = std::move(measured);
  return config;
}

std::string HardwarePresetJson(const HardwareConfig& config, std::string_view comment) {
  nlohmann::ordered_json doc;
  doc["name"] = config.name;
  doc["comment"] = comment;
  if (!config.measured.empty()) doc["measured"] = config.measured;
  doc["bf16_flops"] = config.bf16_flops;
  doc["mfu"] = config.mfu;
  doc["vision_mfu"] = config.vision_mfu;
  if (config.native_encoder_factor > 0) {
    doc["native_encoder_factor"] = config.native_encoder_factor;
  }
  if (config.attention_mfu > 0) doc["attention_mfu"] = config.attention_mfu;
  return doc.dump(2) + "\n";
}

Status WriteHardwarePreset(const std::string& presets_dir, const HardwareConfig& config,
                           std::string_view comment) {
  if (config.name.empty() || config.name.find('/') != std::string::npos ||
      config.name.front() == '.') {
    return Status::InvalidArgument("hardware preset name '{}' is not a plain file name",
                                   config.name);
  }
  MMPT_RETURN_IF_ERROR(config.Validate());
  return WriteFileAtomic(presets_dir + "/hardware/" + config.name + ".json",
                         HardwarePresetJson(config, comment));
}

}  // namespace mmpt::cost
