#include "mmpt/media/smart_resize.h"

#include <algorithm>
#include <cmath>

namespace mmpt::media {
namespace {

// Python's round(): halves go to the even neighbour.
double RoundHalfEven(double x) { return std::nearbyint(x); }

}  // namespace

Result<ResizedSize> SmartResize(uint32_t height, uint32_t width, const ResizeRule& rule) {
  if (height == 0 || width == 0) {
    return Status::InvalidArgument("image size {}x{} has a zero side", width, height);
  }
  double h = height, w = width, factor = rule.factor;
  if (std::max(h, w) / std::min(h, w) > rule.max_aspect_ratio) {
    return Status::InvalidArgument("image size {}x{}: aspect ratio above {}", width, height,
                                   rule.max_aspect_ratio);
  }
  double h_bar = std::max(factor, RoundHalfEven(h / factor) * factor);
  double w_bar = std::max(factor, RoundHalfEven(w / factor) * factor);
  if (h_bar * w_bar > static_cast<double>(rule.max_pixels)) {
    double beta = std::sqrt(h * w / static_cast<double>(rule.max_pixels));
    h_bar = std::max(factor, std::floor(h / beta / factor) * factor);
    w_bar = std::max(factor, std::floor(w / beta / factor) * factor);
  } else if (h_bar * w_bar < static_cast<double>(rule.min_pixels)) {
    double beta = std::sqrt(static_cast<double>(rule.min_pixels) / (h * w));
    h_bar = std::ceil(h * beta / factor) * factor;
    w_bar = std::ceil(w * beta / factor) * factor;
  }
  return ResizedSize{static_cast<uint32_t>(h_bar), static_cast<uint32_t>(w_bar)};
}

}  // namespace mmpt::media
