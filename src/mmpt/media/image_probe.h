#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "mmpt/core/status.h"

namespace mmpt::media {

enum class ImageFormat : uint8_t { kUnknown = 0, kJpeg, kPng, kWebp, kGif, kBmp };

/// Name of a format as written in manifests and messages ("jpeg", "png", ...).
std::string_view ImageFormatName(ImageFormat format);

/// What a header probe learns without decoding pixels.
struct ImageInfo {
  ImageFormat format = ImageFormat::kUnknown;
  uint32_t width = 0;            // pixels, as stored (before EXIF orientation)
  uint32_t height = 0;           // pixels, as stored (before EXIF orientation)
  uint32_t frames = 1;           // >1 for animated GIF/WebP when known
  uint8_t exif_orientation = 1;  // 1..8; 5..8 swap width and height when displayed
};

/// Tell the format from the leading signature bytes alone. A proper prefix of a signature
/// (a file truncated inside it) counts as that format, so probing it reports Corrupt.
ImageFormat SniffImageFormat(std::span<const std::byte> bytes);

/// Read an image's format and size from its header bytes only. Never reads past `bytes`.
/// What is read: JPEG markers up to the first start-of-frame (any SOF, baseline or progressive;
/// the first EXIF APP1 gives the orientation); PNG IHDR (plus acTL frames and eXIf orientation
/// when present); WebP VP8/VP8L/VP8X (VP8X: canvas size, ANMF frames, EXIF orientation); GIF
/// logical screen grown to the first frame's extent, as Pillow reports it, and the frame count;
/// BMP core (12-byte) and info (40+ byte) headers, negative heights meaning top-down rows.
/// A file truncated after its header still probes; its decode will fail.
/// Errors: InvalidArgument (empty, or not a supported format), Corrupt (truncated or malformed
/// header, zero size). Thread safety: pure function.
Result<ImageInfo> ProbeImage(std::span<const std::byte> bytes);

}  // namespace mmpt::media
