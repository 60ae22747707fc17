#include "mmpt/media/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MMPT_RESIZE_AVX2 1
#endif

namespace mmpt::media {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images
// Per-thread scratch larger than this is released after use rather than kept.
constexpr size_t kKeepScratchBytes = size_t{32} << 20;

// Keys' cubic convolution with a = −0.5 (support 2), as each reference writes it: the same
// function, but the operation order and precision set the weights' last bits, so each keeps
// its own. Pillow's bicubic_filter, in double:
double PillowCubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}
// torch's antialiased bicubic filter (cubic_convolution1 and 2), in float:
float TorchCubic(float x) {
  constexpr float a = -0.5f;
  x = std::fabs(x);
  if (x < 1.0f) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2.0f) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0f;
}

// Filter taps of every output pixel along one axis: source window [min, min + count) and
// weights, laid out `taps` apart.
template <typename Weight>
struct Taps {
  int taps = 0;
  std::vector<int> min, count;
  std::vector<Weight> weights;
};

// The normalized taps of an antialiased resize from `in_size` to `out_size`: the filter's
// support widened by the reduction factor, each output pixel's window centred on
// (x + 0.5) · scale, weights divided by their sum. Pillow (precompute_coeffs) and torch
// (_compute_indices_weights_aa) compute exactly this, Pillow in double and torch in float with
// some steps in double; `Real` picks which. The casts below give Pillow's weights bit for bit
// and torch's within their last bits (its per-CPU kernels fuse multiply-adds).
template <typename Real, Real (*Filter)(Real)>
Taps<Real> NormalizedTaps(uint32_t in_size, uint32_t out_size) {
  const Real scale = static_cast<Real>(in_size) / static_cast<Real>(out_size);
  const Real filter_scale = std::max<Real>(scale, 1);
  const Real support = static_cast<Real>(2.0 * filter_scale);
  const Real inv_scale = static_cast<Real>(1.0 / filter_scale);
  Taps<Real> k;
  k.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  k.min.resize(out_size);
  k.count.resize(out_size);
  k.weights.assign(size_t{out_size} * k.taps, 0);
  for (uint32_t xx = 0; xx < out_size; ++xx) {
    const Real center = static_cast<Real>((xx + 0.5) * scale);
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax =
        std::min(static_cast<int>(center + support + 0.5), static_cast<int>(in_size)) - xmin;
    Real* w = &k.weights[size_t{xx} * k.taps];
    Real total = 0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = Filter(static_cast<Real>((static_cast<Real>(x + xmin) - center + 0.5) * inv_scale));
      total += w[x];
    }
    if (total != 0) {
      for (int x = 0; x < xmax; ++x) w[x] /= total;
    }
    k.min[xx] = xmin;
    k.count[xx] = xmax;
  }
  return k;
}

// Pillow's fixed-point taps (normalize_coeffs_8bpc): its normalized weights quantized to
// kPrecisionBits fractional bits, rounding half away from zero.
using Kernel = Taps<int32_t>;

Kernel MakeKernel(uint32_t in_size, uint32_t out_size) {
  Taps<double> real = NormalizedTaps<double, PillowCubic>(in_size, out_size);
  Kernel k;
  k.taps = real.taps;
  k.min = std::move(real.min);
  k.count = std::move(real.count);
  k.weights.resize(real.weights.size());
  for (size_t i = 0; i < real.weights.size(); ++i) {
    const double v = real.weights[i];
    k.weights[i] = v < 0 ? static_cast<int32_t>(-0.5 + v * (1 << kPrecisionBits))
                         : static_cast<int32_t>(0.5 + v * (1 << kPrecisionBits));
  }
  return k;
}

// Give every output pixel a window of exactly `taps` source pixels inside the row, moving
// the window left at the right edge and padding with zero weights (which add nothing), so the
// horizontal pass can run a fixed-length, unrolled tap loop. Needs in_size >= taps.
void PadToFixedTaps(uint32_t in_size, Kernel* k) {
  for (size_t x = 0; x < k->min.size(); ++x) {
    int32_t* w = &k->weights[x * k->taps];
    int start = std::min(k->min[x], static_cast<int>(in_size) - k->taps);
    int shift = k->min[x] - start;
    for (int t = k->count[x] - 1; t >= 0; --t) w[t + shift] = w[t];
    for (int t = 0; t < shift; ++t) w[t] = 0;
    for (int t = k->count[x] + shift; t < k->taps; ++t) w[t] = 0;
    k->min[x] = start;
    k->count[x] = k->taps;
  }
}

inline uint8_t Clip8(int32_t v) {
  return static_cast<uint8_t>(std::clamp(v >> kPrecisionBits, 0, 255));
}

// The hot loops carry `__restrict` (8-bit pixels may otherwise alias the accumulators, which
// blocks vectorization) and are compiled twice: for AVX2 and for the baseline, chosen at load
// time, so the binary runs on any x86-64.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MMPT_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MMPT_VECTOR_CLONES
#endif

// One output row of the horizontal pass with a compile-time tap count (a padded kernel):
// the tap loop unrolls and the accumulators stay in registers.
template <int C, int T>
void HorizontalRowFixed(const uint8_t* __restrict src, const Kernel& k, uint32_t width,
                        uint8_t* __restrict dst) {
  constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);
  const int32_t* __restrict weights = k.weights.data();
  for (uint32_t x = 0; x < width; ++x) {
    const int32_t* __restrict w = weights + size_t{x} * T;
    const uint8_t* __restrict s = src + static_cast<size_t>(k.min[x]) * C;
    int32_t acc[C];
    for (int c = 0; c < C; ++c) acc[c] = kHalf;
    for (int t = 0; t < T; ++t) {
      for (int c = 0; c < C; ++c) acc[c] += s[t * C + c] * w[t];
    }
    for (int c = 0; c < C; ++c) dst[x * C + c] = Clip8(acc[c]);
  }
}

// One output row of the horizontal pass; accumulators stay in registers.
template <int C>
void HorizontalRow(const uint8_t* __restrict src, const Kernel& k, uint32_t width,
                   uint8_t* __restrict dst) {
  constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);
  const int32_t* __restrict weights = k.weights.data();
  for (uint32_t x = 0; x < width; ++x) {
    const int32_t* __restrict w = weights + size_t{x} * k.taps;
    const uint8_t* __restrict s = src + static_cast<size_t>(k.min[x]) * C;
    int32_t a0 = kHalf, a1 = kHalf, a2 = kHalf, a3 = kHalf;
    const int count = k.count[x];
    for (int t = 0; t < count; ++t) {
      a0 += s[t * C] * w[t];
      if constexpr (C > 1) a1 += s[t * C + 1] * w[t];
      if constexpr (C > 2) a2 += s[t * C + 2] * w[t];
      if constexpr (C > 3) a3 += s[t * C + 3] * w[t];
    }
    dst[x * C] = Clip8(a0);
    if constexpr (C > 1) dst[x * C + 1] = Clip8(a1);
    if constexpr (C > 2) dst[x * C + 2] = Clip8(a2);
    if constexpr (C > 3) dst[x * C + 3] = Clip8(a3);
  }
}

using RowFunction = void (*)(const uint8_t*, const Kernel&, uint32_t, uint8_t*);

// The unrolled row function for RGB and the tap counts of reductions up to 4×, if padded.
RowFunction FixedRowFunction(uint32_t channels, int taps) {
  if (channels != 3) return nullptr;
  switch (taps) {
    case 5: return HorizontalRowFixed<3, 5>;
    case 7: return HorizontalRowFixed<3, 7>;
    case 9: return HorizontalRowFixed<3, 9>;
    case 11: return HorizontalRowFixed<3, 11>;
    case 13: return HorizontalRowFixed<3, 13>;
    case 15: return HorizontalRowFixed<3, 15>;
    case 17: return HorizontalRowFixed<3, 17>;
    default: return nullptr;
  }
}

#ifdef MMPT_RESIZE_AVX2
// The horizontal pass for RGB with AVX2, bit-identical to the scalar code. Each 22-bit weight
// is split as w = hi·2048 + lo (lo in [0, 2048)), both halves fit 16 bits, so vpmaddwd can
// form the products exactly: Σ p·w = 2048·Σ p·hi + Σ p·lo, which wraps in int32 exactly as the
// scalar sum would. Four taps per step: one 16-byte load holds their 12 bytes; a shuffle
// pairs taps (t, t+1) per channel in the low lane and (t+2, t+3) in the high lane.
// `hi`/`lo` hold, per output pixel and group of four taps, the 16 int16 weights in that order.
__attribute__((target("avx2"))) void HorizontalRgbAvx2(const Image& in, uint32_t row_first,
                                                       const Kernel& k,
                                                       const std::vector<int16_t>& hi,
                                                       const std::vector<int16_t>& lo, int groups,
                                                       Image* out) {
  const __m256i pair_taps = _mm256_setr_epi8(
      0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,     // taps t, t+1
      6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);  // taps t+2, t+3
  const __m128i half = _mm_set1_epi32(1 << (kPrecisionBits - 1));
  const int64_t row_bytes = int64_t{in.width} * 3;
  const size_t per_pixel = size_t{16} * groups;
  // Output pixels [0, simd_end) have every load inside the row (min is nondecreasing).
  uint32_t simd_end = 0;
  while (simd_end < out->width &&
         int64_t{k.min[simd_end]} * 3 + 12 * int64_t{groups} + 4 <= row_bytes) {
    ++simd_end;
  }
  for (uint32_t y = 0; y < out->height; ++y) {
    const uint8_t* src = in.row(row_first + y);
    uint8_t* dst = out->row(y);
    for (uint32_t x = 0; x < simd_end; ++x) {
      const uint8_t* s = src + static_cast<size_t>(k.min[x]) * 3;
      const int16_t* wh = &hi[x * per_pixel];
      const int16_t* wl = &lo[x * per_pixel];
      __m256i acc_hi = _mm256_setzero_si256(), acc_lo = _mm256_setzero_si256();
      for (int g = 0; g < groups; ++g) {
        __m256i pixels = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128(
                                                 reinterpret_cast<const __m128i*>(s + 12 * g))),
                                             pair_taps);
        acc_hi = _mm256_add_epi32(
            acc_hi, _mm256_madd_epi16(
                        pixels, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wh + 16 * g))));
        acc_lo = _mm256_add_epi32(
            acc_lo, _mm256_madd_epi16(
                        pixels, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wl + 16 * g))));
      }
      __m256i acc = _mm256_add_epi32(_mm256_slli_epi32(acc_hi, 11), acc_lo);
      __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
      sum = _mm_srai_epi32(_mm_add_epi32(sum, half), kPrecisionBits);
      // Saturating packs clamp to [0, 255] exactly as Clip8 does.
      uint32_t rgb = static_cast<uint32_t>(
          _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packus_epi32(sum, sum), sum)));
      std::memcpy(dst + size_t{x} * 3, &rgb, 3);
    }
    for (uint32_t x = simd_end; x < out->width; ++x) {
      const uint8_t* s = src + static_cast<size_t>(k.min[x]) * 3;
      const int32_t* w = &k.weights[size_t{x} * k.taps];
      int32_t acc[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1),
                        1 << (kPrecisionBits - 1)};
      for (int t = 0; t < k.taps; ++t) {
        for (int c = 0; c < 3; ++c) acc[c] += s[t * 3 + c] * w[t];
      }
      for (int c = 0; c < 3; ++c) dst[size_t{x} * 3 + c] = Clip8(acc[c]);
    }
  }
}

bool HaveAvx2() {
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
}
#endif

void Horizontal(const Image& in, uint32_t row_first, Kernel k, bool allow_simd, Image* out) {
#ifdef MMPT_RESIZE_AVX2
  if (allow_simd && in.channels == 3 && in.width >= static_cast<uint32_t>(k.taps) && HaveAvx2()) {
    PadToFixedTaps(in.width, &k);
    int groups = (k.taps + 3) / 4;
    std::vector<int16_t> hi(size_t{out->width} * groups * 16, 0);
    std::vector<int16_t> lo(hi.size(), 0);
    for (uint32_t x = 0; x < out->width; ++x) {
      for (int t = 0; t < k.taps; ++t) {
        int32_t w = k.weights[size_t{x} * k.taps + t];
        // Position of tap t: its group, lane (pair 0 or 1), then (t, t+1) interleaved ×3.
        size_t base = size_t{x} * groups * 16 + size_t(t / 4) * 16 + size_t(t % 4 / 2) * 8;
        for (int c = 0; c < 3; ++c) {
          hi[base + 2 * c + t % 2] = static_cast<int16_t>(w >> 11);
          lo[base + 2 * c + t % 2] = static_cast<int16_t>(w & 0x7FF);
        }
      }
    }
    HorizontalRgbAvx2(in, row_first, k, hi, lo, groups, out);
    return;
  }
#else
  (void)allow_simd;
#endif
  RowFunction fixed = FixedRowFunction(in.channels, k.taps);
  if (fixed != nullptr && in.width >= static_cast<uint32_t>(k.taps)) {
    PadToFixedTaps(in.width, &k);
    for (uint32_t y = 0; y < out->height; ++y) {
      fixed(in.row(row_first + y), k, out->width, out->row(y));
    }
    return;
  }
  for (uint32_t y = 0; y < out->height; ++y) {
    const uint8_t* src = in.row(row_first + y);
    uint8_t* dst = out->row(y);
    switch (in.channels) {
      case 1: HorizontalRow<1>(src, k, out->width, dst); break;
      case 2: HorizontalRow<2>(src, k, out->width, dst); break;
      case 3: HorizontalRow<3>(src, k, out->width, dst); break;
      default: HorizontalRow<4>(src, k, out->width, dst); break;
    }
  }
}

// acc[i] += weight · src[i] over a whole row: vectorizes.
MMPT_VECTOR_CLONES
void AccumulateRow(const uint8_t* __restrict src, int32_t weight, size_t n,
                   int32_t* __restrict acc) {
  for (size_t i = 0; i < n; ++i) acc[i] += src[i] * weight;
}

MMPT_VECTOR_CLONES
void ClipRow(const int32_t* __restrict acc, size_t n, uint8_t* __restrict dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = Clip8(acc[i]);
}

// Row-wise accumulation: every tap adds a whole source row.
void Vertical(const Image& in, const Kernel& k, int row_shift, Image* out) {
  constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);
  size_t n = out->row_bytes();
  thread_local std::vector<int32_t> acc;
  acc.resize(n);
  for (uint32_t y = 0; y < out->height; ++y) {
    std::fill(acc.begin(), acc.end(), kHalf);
    const int32_t* w = &k.weights[size_t{y} * k.taps];
    for (int t = 0; t < k.count[y]; ++t) {
      AccumulateRow(in.row(static_cast<uint32_t>(k.min[y] - row_shift + t)), w[t], n, acc.data());
    }
    ClipRow(acc.data(), n, out->row(y));
  }
}

// torchvision's resize of a uint8 tensor: the pixels as float, one float pass per axis that
// changes (width first), then clamped to [0, 255] and rounded half to even. Each output value
// is Σ in[min + t] · w[t] accumulated in float from the first tap, as torch's
// interpolate_aa_single_dim does; channels are independent, so the interleaved layout gives
// the values torch's planar one does.
template <typename In, int C>
void TorchRow(const In* __restrict src, const Taps<float>& k, uint32_t width,
              float* __restrict dst) {
  for (uint32_t x = 0; x < width; ++x) {
    const float* w = &k.weights[size_t{x} * k.taps];
    const In* s = src + static_cast<size_t>(k.min[x]) * C;
    float acc[C];
    for (int c = 0; c < C; ++c) acc[c] = static_cast<float>(s[c]) * w[0];
    for (int t = 1; t < k.count[x]; ++t) {
      for (int c = 0; c < C; ++c) acc[c] += static_cast<float>(s[t * C + c]) * w[t];
    }
    for (int c = 0; c < C; ++c) dst[size_t{x} * C + c] = acc[c];
  }
}

// The width pass over `rows` rows of `in_width` pixels of `channels` each.
template <typename In>
void TorchHorizontal(const In* in, uint32_t in_width, uint32_t rows, uint32_t channels,
                     const Taps<float>& k, float* out) {
  const size_t out_row = k.min.size() * channels;
  const size_t in_row = size_t{in_width} * channels;
  for (uint32_t y = 0; y < rows; ++y) {
    const In* src = in + y * in_row;
    float* dst = out + y * out_row;
    switch (channels) {
      case 1: TorchRow<In, 1>(src, k, static_cast<uint32_t>(k.min.size()), dst); break;
      case 2: TorchRow<In, 2>(src, k, static_cast<uint32_t>(k.min.size()), dst); break;
      case 3: TorchRow<In, 3>(src, k, static_cast<uint32_t>(k.min.size()), dst); break;
      default: TorchRow<In, 4>(src, k, static_cast<uint32_t>(k.min.size()), dst); break;
    }
  }
}

// acc[i] = src[i] · weight (first tap) or acc[i] += src[i] · weight over a whole row.
template <typename In>
void AccumulateRowFloat(const In* __restrict src, float weight, size_t n, bool first,
                        float* __restrict acc) {
  if (first) {
    for (size_t i = 0; i < n; ++i) acc[i] = static_cast<float>(src[i]) * weight;
  } else {
    for (size_t i = 0; i < n; ++i) acc[i] += static_cast<float>(src[i]) * weight;
  }
}

// The height pass: rows of `n` values each.
template <typename In>
void TorchVertical(const In* in, size_t n, const Taps<float>& k, float* out) {
  for (size_t y = 0; y < k.min.size(); ++y) {
    const float* w = &k.weights[y * k.taps];
    for (int t = 0; t < k.count[y]; ++t) {
      AccumulateRowFloat(in + static_cast<size_t>(k.min[y] + t) * n, w[t], n, t == 0, out + y * n);
    }
  }
}

MMPT_VECTOR_CLONES
void RoundToBytes(const float* __restrict in, size_t n, uint8_t* __restrict out) {
  for (size_t i = 0; i < n; ++i) {
    out[i] = static_cast<uint8_t>(std::nearbyint(std::clamp(in[i], 0.0f, 255.0f)));
  }
}

}  // namespace

Status ResizeBicubicInto(const Image& image, uint32_t width, uint32_t height, Image* out,
                         bool allow_simd) {
  if (width == 0 || height == 0 || image.width == 0 || image.height == 0) {
    return Status::InvalidArgument("resize: {}x{} to {}x{}: zero size", image.width, image.height,
                                   width, height);
  }
  MMPT_CHECK(out != &image);
  if (width == image.width && height == image.height) {
    out->Reset(width, height, image.channels);
    std::memcpy(out->pixels.data(), image.pixels.data(), image.pixels.size());
    return Status::OK();
  }
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
  if (!horizontal) {
    out->Reset(width, height, image.channels);
    Vertical(image, kv, 0, out);
    return Status::OK();
  }
  Kernel kh = MakeKernel(image.width, width);
  if (!vertical) {
    out->Reset(width, height, image.channels);
    Horizontal(image, 0, std::move(kh), allow_simd, out);
    return Status::OK();
  }
  // The intermediate is reused per thread: a fresh one per image costs page faults.
  thread_local Image temp;
  temp.Reset(width, static_cast<uint32_t>(row_last - row_first), image.channels);
  Horizontal(image, static_cast<uint32_t>(row_first), std::move(kh), allow_simd, &temp);
  out->Reset(width, height, image.channels);
  Vertical(temp, kv, row_first, out);
  if (temp.pixels.capacity() > kKeepScratchBytes) temp = Image{};
  return Status::OK();
}

Status ResizeTorchBicubicInto(const Image& image, uint32_t width, uint32_t height, Image* out) {
  if (width == 0 || height == 0 || image.width == 0 || image.height == 0) {
    return Status::InvalidArgument("resize: {}x{} to {}x{}: zero size", image.width, image.height,
                                   width, height);
  }
  MMPT_CHECK(out != &image);
  const uint32_t c = image.channels;
  out->Reset(width, height, c);
  const bool horizontal = width != image.width;
  const bool vertical = height != image.height;
  if (!horizontal && !vertical) {
    std::memcpy(out->pixels.data(), image.pixels.data(), image.pixels.size());
    return Status::OK();
  }
  // Per-thread float buffers: a fresh one per frame costs page faults.
  thread_local std::vector<float> across, down;
  const uint8_t* in = image.pixels.data();
  const float* result = nullptr;
  if (horizontal) {
    across.resize(size_t{width} * c * image.height);
    TorchHorizontal(in, image.width, image.height, c,
                    NormalizedTaps<float, TorchCubic>(image.width, width), across.data());
    result = across.data();
  }
  if (vertical) {
    const Taps<float> k = NormalizedTaps<float, TorchCubic>(image.height, height);
    down.resize(out->pixels.size());
    if (horizontal) {
      TorchVertical(across.data(), size_t{width} * c, k, down.data());
    } else {
      TorchVertical(in, size_t{width} * c, k, down.data());
    }
    result = down.data();
  }
  RoundToBytes(result, out->pixels.size(), out->pixels.data());
  for (std::vector<float>* scratch : {&across, &down}) {
    if (scratch->capacity() * sizeof(float) > kKeepScratchBytes) *scratch = {};
  }
  return Status::OK();
}

Status ResizeBicubicInto(const Image& image, uint32_t width, uint32_t height, BicubicRule rule,
                         Image* out) {
  return rule == BicubicRule::kTorchvision ? ResizeTorchBicubicInto(image, width, height, out)
                                           : ResizeBicubicInto(image, width, height, out);
}

Result<Image> ResizeBicubic(const Image& image, uint32_t width, uint32_t height, bool allow_simd) {
  Image out;
  MMPT_RETURN_IF_ERROR(ResizeBicubicInto(image, width, height, &out, allow_simd));
  return out;
}

}  // namespace mmpt::media
