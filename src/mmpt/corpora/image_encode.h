#pragma once

#include <cstdint>
#include <string>

#include "mmpt/core/status.h"
#include "mmpt/media/image.h"
#include "mmpt/media/image_probe.h"

namespace mmpt::corpora {

/// How to encode an Image. The image's channel count picks the colour type where the format
/// has one (PNG: gray, gray + alpha, RGB, RGBA).
struct EncodeOptions {
  media::ImageFormat format = media::ImageFormat::kJpeg;
  int quality = 90;              // JPEG and lossy WebP, 1..100
  bool progressive = false;      // JPEG: progressive scans instead of baseline
  bool cmyk = false;             // JPEG: store Adobe (inverted) CMYK; needs 3 channels
  uint8_t exif_orientation = 0;  // 1..8: write an EXIF orientation (JPEG APP1, PNG eXIf,
                                 // WebP EXIF chunk); 0: write no EXIF
  bool palette = false;          // PNG: 8-bit palette (6×6×6 colour cube); needs 3 channels
  uint8_t png_bit_depth = 8;     // PNG: 8 or 16 (16-bit samples whose high byte is the pixel)
  bool lossless = false;         // WebP: VP8L instead of VP8
  uint32_t frames = 1;           // GIF, WebP: >1 writes an animation of that many frames
  bool bmp_top_down = false;     // BMP: negative height, rows stored top-down
  bool bmp_core_header = false;  // BMP: 12-byte BITMAPCOREHEADER instead of BITMAPINFOHEADER
};

/// Encode `image` to a complete file in `options.format` with libjpeg-turbo, libpng, libwebp
/// or giflib (BMP is written directly: 24-bit, uncompressed).
/// GIF and palette PNG quantize to a 6×6×6 colour cube; JPEG, GIF and BMP drop alpha.
/// Errors: InvalidArgument (options that do not fit the image or format, empty image),
/// Internal (the codec failed). Thread safety: reentrant.
Result<std::string> EncodeImage(const media::Image& image, const EncodeOptions& options);

}  // namespace mmpt::corpora
