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
  uint32_t width = 0;   // pixels, as stored (before EXIF orientation)
  uint32_t height = 0;  // pixels, as stored (before EXIF orientation)
  uint32_t frames = 1;  // >1 for animated GIF/WebP when known
  uint8_t exif_orientation = 1;  // 1..8; 5..8 swap width and height when displayed
};

/// Read an image's format and size from its header bytes only. Never reads past `bytes`.
/// Errors: InvalidArgument (not a supported format), Corrupt (truncated or malformed header,
/// zero size).
Result<ImageInfo> ProbeImage(std::span<const std::byte> bytes);

}  // namespace mmpt::media
