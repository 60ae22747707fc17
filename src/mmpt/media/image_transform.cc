#include "mmpt/media/image_transform.h"

#include <cstring>
#include <utility>

#include "mmpt/core/status.h"

namespace mmpt::media {

Image ApplyExifOrientation(Image image, uint8_t orientation) {
  if (orientation < 2 || orientation > 8) return image;
  const uint32_t w = image.width, h = image.height, c = image.channels;
  bool swap = orientation >= 5;
  Image out{swap ? h : w, swap ? w : h, c, {}};
  out.pixels.resize(image.pixels.size());
  for (uint32_t y = 0; y < out.height; ++y) {
    uint8_t* dst = out.row(y);
    for (uint32_t x = 0; x < out.width; ++x, dst += c) {
      // Source pixel of output (x, y) for each transpose.
      uint32_t sx, sy;
      switch (orientation) {
        case 2:
          sx = w - 1 - x;
          sy = y;
          break;
        case 3:
          sx = w - 1 - x;
          sy = h - 1 - y;
          break;
        case 4:
          sx = x;
          sy = h - 1 - y;
          break;
        case 5:
          sx = y;
          sy = x;
          break;
        case 6:
          sx = y;
          sy = h - 1 - x;
          break;
        case 7:
          sx = w - 1 - y;
          sy = h - 1 - x;
          break;
        default:
          sx = w - 1 - y;
          sy = x;
          break;  // 8
      }
      std::memcpy(dst, image.row(sy) + size_t{sx} * c, c);
    }
  }
  return out;
}

Image CompositeOnWhite(Image image) {
  MMPT_CHECK(image.channels == 3 || image.channels == 4);
  if (image.channels == 3) return image;
  Image out{image.width, image.height, 3, {}};
  size_t n = size_t{image.width} * image.height;
  out.pixels.resize(n * 3);
  const uint8_t* in = image.pixels.data();
  uint8_t* o = out.pixels.data();
  for (size_t i = 0; i < n; ++i, in += 4, o += 3) {
    uint32_t a = in[3];
    for (int k = 0; k < 3; ++k) {
      // Pillow's BLEND: DIV255(background·(255−a) + colour·a), rounded.
      uint32_t t = 255 * (255 - a) + in[k] * a + 128;
      o[k] = static_cast<uint8_t>(((t >> 8) + t) >> 8);
    }
  }
  return out;
}

}  // namespace mmpt::media
