#pragma once

#include <cstdint>

#include "mmpt/core/status.h"
#include "mmpt/media/image.h"

namespace mmpt::media {

/// Whose bicubic resize to reproduce. Both are Keys' cubic with a = −0.5 and antialiasing (the
/// support widened by the reduction factor) computed as separable passes, width first; they
/// differ in arithmetic, by up to a few levels per pixel.
enum class BicubicRule : uint8_t {
  /// Pillow's Image.resize(BICUBIC): fixed-point weights, the intermediate rounded to 8 bits.
  kPillow,
  /// torchvision's F.resize(uint8 tensor, BICUBIC, antialias=True): float weights and float
  /// intermediate, the result clamped and rounded half to even.
  kTorchvision,
};

/// Resize with Pillow's BICUBIC filter, bit for bit as Pillow's Image.resize does it for 8-bit
/// images (reducing_gap=None, which Hugging Face image processors use): Keys' cubic with
/// a = −0.5, support 2 scaled by the reduction factor (antialiasing), coefficients normalized
/// per output pixel and quantized to 22 fractional bits, a horizontal pass then a vertical
/// pass with rounding and clipping to 8 bits between them; an axis whose size does not change
/// is not filtered. Works on any channel count.
/// On x86-64 with AVX2 the horizontal pass of RGB images runs vectorized with the same integer
/// arithmetic; `allow_simd = false` forces the portable code (tests compare the two).
/// Errors: InvalidArgument for a zero target size or an empty image.
/// Thread safety: reentrant.
Result<Image> ResizeBicubic(const Image& image, uint32_t width, uint32_t height,
                            bool allow_simd = true);

/// As ResizeBicubic, into `out` (reusing its capacity; must not be `image`). The intermediate
/// of the two passes lives in a per-thread buffer that is kept between calls unless large.
Status ResizeBicubicInto(const Image& image, uint32_t width, uint32_t height, Image* out,
                         bool allow_simd = true);

/// Resize as torchvision's `F.resize(tensor, [height, width], BICUBIC, antialias=True)` does
/// for a uint8 tensor (Debian's torchvision 0.14 with torch 1.13, CPU): the pixels cast to
/// float, torch's _upsample_bicubic2d_aa (Keys' cubic, a = −0.5, support 2 scaled by the
/// reduction factor, weights normalized per output pixel, all in float), a width pass then a
/// height pass with a float intermediate (an axis whose size does not change is not filtered),
/// then clamped to [0, 255] and rounded half to even. Within one level of torchvision's
/// output: torch computes the same weights in float through kernels built per CPU (with fused
/// multiply-adds), so their last bits differ and a value near a rounding boundary may land on
/// the other side (tests/python/test_video_fidelity.py measures how often). Works on any channel
/// count, into `out` (reusing its capacity; must not be `image`); float scratch is kept per
/// thread unless large.
/// Errors: InvalidArgument for a zero target size or an empty image. Thread safety: reentrant.
Status ResizeTorchBicubicInto(const Image& image, uint32_t width, uint32_t height, Image* out);

/// ResizeBicubicInto (Pillow's) or ResizeTorchBicubicInto, by `rule`.
Status ResizeBicubicInto(const Image& image, uint32_t width, uint32_t height, BicubicRule rule,
                         Image* out);

}  // namespace mmpt::media
