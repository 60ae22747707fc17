#pragma once

#include <cstdint>

#include "mmpt/media/image.h"

namespace mmpt::media {

/// Turn an image as stored into the image as displayed, for an EXIF orientation 1..8, the way
/// Pillow's ImageOps.exif_transpose does (2 mirror, 3 rotate 180°, 4 flip, 5 transpose,
/// 6 rotate 90° clockwise, 7 transverse, 8 rotate 90° counter-clockwise). Orientations 5..8
/// swap width and height; 1 and unknown values return the image unchanged.
Image ApplyExifOrientation(Image image, uint8_t orientation);

/// Composite an RGBA image on a white background into RGB, with Pillow's integer blend
/// (paste with the alpha band as mask). Images without alpha (3 channels) pass through.
/// Requires 3 or 4 channels.
Image CompositeOnWhite(Image image);

}  // namespace mmpt::media
