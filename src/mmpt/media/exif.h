#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace mmpt::media {

/// Read the orientation tag (0x0112) of IFD0 from an EXIF payload: a TIFF header ("II*\0" or
/// "MM\0*") and its IFDs, optionally preceded by the "Exif\0\0" prefix JPEG APP1 segments carry.
/// Returns 1..8, or 1 when the payload has no orientation tag, is malformed or holds a value
/// outside 1..8 (Pillow's ImageOps.exif_transpose leaves such images untouched too).
/// Never reads outside `payload`. Thread safety: pure function.
uint8_t ExifOrientation(std::span<const std::byte> payload);

}  // namespace mmpt::media
