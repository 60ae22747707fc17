#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "mmpt/core/status.h"
#include "mmpt/media/image.h"
#include "mmpt/media/image_probe.h"

namespace mmpt::media {

/// Pillow's default decompression-bomb limit (Image.MAX_IMAGE_PIXELS).
inline constexpr uint64_t kDefaultMaxDecodePixels = 89'478'485;

struct DecodeOptions {
  /// Refuse images whose stored width × height exceeds this, before any pixel is decoded.
  uint64_t max_pixels = kDefaultMaxDecodePixels;
  /// JPEG only: decode at 1/`jpeg_scale_denom` of the size with libjpeg's DCT scaling
  /// (1, 2, 4 or 8). 1 decodes at full size, as Pillow does unless told to draft.
  uint32_t jpeg_scale_denom = 1;
};

/// A decoded image as stored (before EXIF orientation) and what the probe learnt of it.
struct DecodedImage {
  Image image;     // 3 channels (RGB), or 4 (RGBA) when the file has transparency
  ImageInfo info;  // format, stored size, frames, EXIF orientation
};

/// Decode a JPEG (baseline, progressive, grayscale, CMYK/YCCK), PNG (any colour type and
/// depth; palette and tRNS transparency become alpha, 16-bit samples keep their high byte),
/// WebP (lossy, lossless, first frame of an animation), GIF (first frame on its canvas, grown
/// to the frame as Pillow does) or BMP to 8-bit RGB or RGBA. Grayscale becomes RGB. CMYK
/// converts as Pillow does (Adobe's inverted inks, no colour management).
/// The header is probed first: an image above `options.max_pixels` is refused without decoding.
/// Errors: InvalidArgument (unknown format, too many pixels), Corrupt (truncated or malformed
/// data). Thread safety: reentrant.
Result<DecodedImage> DecodeImage(std::span<const std::byte> bytes,
                                 const DecodeOptions& options = {});

/// As DecodeImage, into `image`, reusing its buffer's capacity (a per-thread workspace saves
/// the page faults of a fresh allocation per image); `info` (may be null) receives the probe.
/// On error `image` holds unspecified pixels.
Status DecodeImageInto(std::span<const std::byte> bytes, const DecodeOptions& options, Image* image,
                       ImageInfo* info);

}  // namespace mmpt::media
