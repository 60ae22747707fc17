#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mmpt::media {

/// An 8-bit image in memory: rows top to bottom, pixels interleaved, `width * channels` bytes
/// per row with no padding. Channels: 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA.
struct Image {
  uint32_t width = 0;
  uint32_t height = 0;
  uint32_t channels = 3;
  std::vector<uint8_t> pixels;

  size_t row_bytes() const { return size_t{width} * channels; }
  uint8_t* row(uint32_t y) { return pixels.data() + y * row_bytes(); }
  const uint8_t* row(uint32_t y) const { return pixels.data() + y * row_bytes(); }
};

}  // namespace mmpt::media
