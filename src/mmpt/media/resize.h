#pragma once

#include <cstdint>

#include "mmpt/core/status.h"
#include "mmpt/media/image.h"

namespace mmpt::media {

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

}  // namespace mmpt::media
