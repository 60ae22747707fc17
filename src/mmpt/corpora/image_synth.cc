#include "mmpt/corpora/image_synth.h"

#include <algorithm>
#include <array>

namespace mmpt::corpora {

// Moved here from the media module; its names are used unqualified.
using namespace mmpt::media;
namespace {

// splitmix64: a tiny, fully specified generator, so pixels do not depend on the standard
// library's distributions.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t Below(uint32_t n) { return n == 0 ? 0 : static_cast<uint32_t>(Next() % n); }

 private:
  uint64_t state_;
};

struct Shape {
  bool disc;
  int64_t x0, y0, x1, y1;  // rectangle corners, or disc centre (x0, y0) and radius x1
  std::array<uint8_t, 3> color;
};

uint8_t Gray(const std::array<uint8_t, 3>& c) {
  return static_cast<uint8_t>((c[0] * 299 + c[1] * 587 + c[2] * 114 + 500) / 1000);
}

}  // namespace

Image SynthesizeImage(uint32_t width, uint32_t height, uint32_t channels, uint64_t seed) {
  Image image{width, height, std::clamp<uint32_t>(channels, 1, 4), {}};
  image.pixels.resize(image.row_bytes() * height);
  Rng rng(seed);
  std::array<uint8_t, 3> from{}, to{};
  for (auto& v : from) v = static_cast<uint8_t>(rng.Below(256));
  for (auto& v : to) v = static_cast<uint8_t>(rng.Below(256));
  // Gradient direction: weights on x and y in [0, 16].
  int64_t gx = rng.Below(17), gy = 16 - gx;
  int64_t span = std::max<int64_t>(1, gx * (int64_t{width} - 1) + gy * (int64_t{height} - 1));
  std::vector<Shape> shapes(2 + rng.Below(4));
  int64_t w = std::max<uint32_t>(width, 1), h = std::max<uint32_t>(height, 1);
  for (auto& s : shapes) {
    s.disc = rng.Below(2) == 0;
    s.x0 = rng.Below(width);
    s.y0 = rng.Below(height);
    if (s.disc) {
      s.x1 = 1 + rng.Below(static_cast<uint32_t>(std::max<int64_t>(1, std::min(w, h) / 3)));
    } else {
      s.x1 = s.x0 + 1 + rng.Below(static_cast<uint32_t>(w / 2 + 1));
      s.y1 = s.y0 + 1 + rng.Below(static_cast<uint32_t>(h / 2 + 1));
    }
    for (auto& v : s.color) v = static_cast<uint8_t>(rng.Below(256));
  }
  int64_t cx = width / 2, cy = height / 2;
  int64_t max_r2 = std::max<int64_t>(1, cx * cx + cy * cy);
  std::array<uint8_t, 3> c;
  for (uint32_t y = 0; y < height; ++y) {
    uint8_t* out = image.row(y);
    for (uint32_t x = 0; x < width; ++x) {
      int64_t t = gx * x + gy * y;
      for (int k = 0; k < 3; ++k)
        c[k] = static_cast<uint8_t>(from[k] + (to[k] - from[k]) * t / span);
      for (const auto& s : shapes) {
        int64_t dx = x - s.x0, dy = int64_t{y} - s.y0;
        bool inside = s.disc ? dx * dx + dy * dy <= s.x1 * s.x1
                             : x >= s.x0 && x < s.x1 && y >= s.y0 && y < s.y1;
        if (inside) c = s.color;
      }
      int64_t rx = int64_t{x} - cx, ry = int64_t{y} - cy;
      uint8_t alpha = static_cast<uint8_t>(255 - 255 * (rx * rx + ry * ry) / max_r2);
      switch (image.channels) {
        case 1: out[0] = Gray(c); break;
        case 2:
          out[0] = Gray(c);
          out[1] = alpha;
          break;
        case 3: std::copy(c.begin(), c.end(), out); break;
        default:
          std::copy(c.begin(), c.end(), out);
          out[3] = alpha;
          break;
      }
      out += image.channels;
    }
  }
  return image;
}

Result<std::string> SynthesizeImageFile(uint32_t width, uint32_t height, uint32_t channels,
                                        uint64_t seed, const EncodeOptions& options) {
  if (width == 0 || height == 0) {
    return Status::InvalidArgument("synthetic image size {}x{} has a zero side", width, height);
  }
  return EncodeImage(SynthesizeImage(width, height, channels, seed), options);
}

}  // namespace mmpt::corpora
