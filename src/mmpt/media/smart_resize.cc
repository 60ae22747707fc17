#include "mmpt/media/smart_resize.h"

#include <algorithm>
#include <cmath>

namespace mmpt::media {
namespace {

// Python's round(): halves go to the even neighbour.
double RoundHalfEven(double x) { return std::nearbyint(x); }

}  // namespace

Result<ResizedSize> SmartResize(uint32_t height, uint32_t width, const ResizeRule& rule) {
  return SmartResize(height, width, rule.factor, static_cast<double>(rule.min_pixels),
                     static_cast<double>(rule.max_pixels), rule.max_aspect_ratio);
}

Result<ResizedSize> SmartResize(uint32_t height, uint32_t width, uint32_t factor_pixels,
                                double min_pixels, double max_pixels, double max_aspect_ratio) {
  if (height == 0 || width == 0) {
    return Status::InvalidArgument("image size {}x{} has a zero side", width, height);
  }
  double h = height, w = width, factor = factor_pixels;
  if (std::max(h, w) / std::min(h, w) > max_aspect_ratio) {
    return Status::InvalidArgument("image size {}x{}: aspect ratio above {}", width, height,
                                   max_aspect_ratio);
  }
  double h_bar = std::max(factor, RoundHalfEven(h / factor) * factor);
  double w_bar = std::max(factor, RoundHalfEven(w / factor) * factor);
  if (h_bar * w_bar > max_pixels) {
    double beta = std::sqrt(h * w / max_pixels);
    h_bar = std::max(factor, std::floor(h / beta / factor) * factor);
    w_bar = std::max(factor, std::floor(w / beta / factor) * factor);
  } else if (h_bar * w_bar < min_pixels) {
    double beta = std::sqrt(min_pixels / (h * w));
    h_bar = std::ceil(h * beta / factor) * factor;
    w_bar = std::ceil(w * beta / factor) * factor;
  }
  return ResizedSize{static_cast<uint32_t>(h_bar), static_cast<uint32_t>(w_bar)};
}

Result<ResizedSize> VideoSmartResize(uint64_t num_frames, uint32_t height, uint32_t width,
                                     uint32_t factor_pixels, uint32_t temporal_factor,
                                     double min_pixels, double max_pixels,
                                     double max_aspect_ratio) {
  if (height == 0 || width == 0) {
    return Status::InvalidArgument("video frame size {}x{} has a zero side", width, height);
  }
  double h = height, w = width, factor = factor_pixels;
  if (h < factor || w < factor) {  // Python's int(): truncation
    const double scale = std::max(factor / h, factor / w);
    h = std::trunc(h * scale);
    w = std::trunc(w * scale);
  }
  if (std::max(h, w) / std::min(h, w) > max_aspect_ratio) {
    return Status::InvalidArgument("video frame size {}x{}: aspect ratio above {}", width, height,
                                   max_aspect_ratio);
  }
  const double n = static_cast<double>(num_frames);
  double h_bar = RoundHalfEven(h / factor) * factor;
  double w_bar = RoundHalfEven(w / factor) * factor;
  const double t_bar = RoundHalfEven(n / temporal_factor) * temporal_factor;
  if (t_bar * h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(n * h * w / max_pixels);
    h_bar = std::max(factor, std::floor(h / beta / factor) * factor);
    w_bar = std::max(factor, std::floor(w / beta / factor) * factor);
  } else if (t_bar * h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(min_pixels / (n * h * w));
    h_bar = std::ceil(h * beta / factor) * factor;
    w_bar = std::ceil(w * beta / factor) * factor;
  }
  return ResizedSize{static_cast<uint32_t>(h_bar), static_cast<uint32_t>(w_bar)};
}

}  // namespace mmpt::media
