#include "mmpt/media/resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace mmpt::media {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images

double Bicubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// Filter taps of every output pixel along one axis: source window [min, min + count) and
// fixed-point weights, laid out `taps` apart.
struct Kernel {
  int taps = 0;
  std::vector<int> min, count;
  std::vector<int32_t> weights;
};

// Mirrors Pillow's precompute_coeffs + normalize_coeffs_8bpc, including its use of a float
// box and truncating casts, so the weights are identical.
Kernel MakeKernel(uint32_t in_size, uint32_t out_size) {
  constexpr double kSupport = 2.0;
  float in0 = 0.0f, in1 = static_cast<float>(in_size);
  double scale = static_cast<double>(in1 - in0) / out_size;
  double filter_scale = std::max(scale, 1.0);
  double support = kSupport * filter_scale;
  Kernel k;
  k.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  k.min.resize(out_size);
  k.count.resize(out_size);
  k.weights.assign(size_t{out_size} * k.taps, 0);
  std::vector<double> w(k.taps);
  for (uint32_t xx = 0; xx < out_size; ++xx) {
    double center = in0 + (xx + 0.5) * scale;
    double ss = 1.0 / filter_scale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > static_cast<int>(in_size)) xmax = static_cast<int>(in_size);
    xmax -= xmin;
    double total = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = Bicubic((x + xmin - center + 0.5) * ss);
      total += w[x];
    }
    int32_t* out = &k.weights[size_t{xx} * k.taps];
    for (int x = 0; x < xmax; ++x) {
      double v = total != 0.0 ? w[x] / total : w[x];
      out[x] = v < 0 ? static_cast<int32_t>(-0.5 + v * (1 << kPrecisionBits))
                     : static_cast<int32_t>(0.5 + v * (1 << kPrecisionBits));
    }
    k.min[xx] = xmin;
    k.count[xx] = xmax;
  }
  return k;
}

inline uint8_t Clip8(int32_t v) {
  return static_cast<uint8_t>(std::clamp(v >> kPrecisionBits, 0, 255));
}

template <int C>
void Horizontal(const Image& in, uint32_t row_first, const Kernel& k, Image* out) {
  constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);
  for (uint32_t y = 0; y < out->height; ++y) {
    const uint8_t* src = in.row(row_first + y);
    uint8_t* dst = out->row(y);
    for (uint32_t x = 0; x < out->width; ++x) {
      const int32_t* w = &k.weights[size_t{x} * k.taps];
      const uint8_t* s = src + static_cast<size_t>(k.min[x]) * C;
      int32_t acc[C];
      for (int c = 0; c < C; ++c) acc[c] = kHalf;
      for (int t = 0; t < k.count[x]; ++t) {
        for (int c = 0; c < C; ++c) acc[c] += s[t * C + c] * w[t];
      }
      for (int c = 0; c < C; ++c) dst[x * C + c] = Clip8(acc[c]);
    }
  }
}

void HorizontalAny(const Image& in, uint32_t row_first, const Kernel& k, Image* out) {
  switch (in.channels) {
    case 1: return Horizontal<1>(in, row_first, k, out);
    case 2: return Horizontal<2>(in, row_first, k, out);
    case 3: return Horizontal<3>(in, row_first, k, out);
    default: return Horizontal<4>(in, row_first, k, out);
  }
}

// Row-wise accumulation: every tap adds a whole source row, which compilers vectorize.
void Vertical(const Image& in, const Kernel& k, int row_shift, Image* out) {
  constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);
  size_t n = out->row_bytes();
  std::vector<int32_t> acc(n);
  for (uint32_t y = 0; y < out->height; ++y) {
    std::fill(acc.begin(), acc.end(), kHalf);
    const int32_t* w = &k.weights[size_t{y} * k.taps];
    for (int t = 0; t < k.count[y]; ++t) {
      const uint8_t* src = in.row(static_cast<uint32_t>(k.min[y] - row_shift + t));
      int32_t wt = w[t];
      for (size_t i = 0; i < n; ++i) acc[i] += src[i] * wt;
    }
    uint8_t* dst = out->row(y);
    for (size_t i = 0; i < n; ++i) dst[i] = Clip8(acc[i]);
  }
}

}  // namespace

Result<Image> ResizeBicubic(const Image& image, uint32_t width, uint32_t height) {
  if (width == 0 || height == 0 || image.width == 0 || image.height == 0) {
    return Status::InvalidArgument("resize: {}x{} to {}x{}: zero size", image.width,
                                   image.height, width, height);
  }
  if (width == image.width && height == image.height) return image;
  bool horizontal = width != image.width;
  bool vertical = height != image.height;
  Kernel kv;
  int row_first = 0, row_last = static_cast<int>(image.height);
  if (vertical) {
    kv = MakeKernel(image.height, height);
    // Only the source rows the vertical pass reads go through the horizontal pass.
    row_first = kv.min.front();
    row_last = kv.min.back() + kv.count.back();
  }
  Image temp;
  const Image* source = &image;
  if (horizontal) {
    Kernel kh = MakeKernel(image.width, width);
    temp = Image{width, static_cast<uint32_t>(row_last - row_first), image.channels, {}};
    temp.pixels.resize(temp.row_bytes() * temp.height);
    HorizontalAny(image, static_cast<uint32_t>(row_first), kh, &temp);
    source = &temp;
  } else {
    row_first = 0;
  }
  if (!vertical) return temp;
  Image out{width, height, image.channels, {}};
  out.pixels.resize(out.row_bytes() * height);
  Vertical(*source, kv, row_first, &out);
  return out;
}

}  // namespace mmpt::media
