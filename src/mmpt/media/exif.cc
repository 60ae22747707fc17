#include "mmpt/media/exif.h"

#include <cstring>

namespace mmpt::media {

uint8_t ExifOrientation(std::span<const std::byte> payload) {
  const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
  size_t n = payload.size();
  if (n >= 6 && std::memcmp(p, "Exif\0\0", 6) == 0) {
    p += 6;
    n -= 6;
  }
  if (n < 8) return 1;
  bool little;
  if (p[0] == 'I' && p[1] == 'I' && p[2] == 42 && p[3] == 0) {
    little = true;
  } else if (p[0] == 'M' && p[1] == 'M' && p[2] == 0 && p[3] == 42) {
    little = false;
  } else {
    return 1;
  }
  auto u16 = [&](size_t at) -> uint32_t {
    return little ? p[at] | (p[at + 1] << 8) : (p[at] << 8) | p[at + 1];
  };
  auto u32 = [&](size_t at) -> uint32_t {
    return little ? (uint32_t{p[at]} | uint32_t{p[at + 1]} << 8 | uint32_t{p[at + 2]} << 16 |
                     uint32_t{p[at + 3]} << 24)
                  : (uint32_t{p[at]} << 24 | uint32_t{p[at + 1]} << 16 | uint32_t{p[at + 2]} << 8 |
                     uint32_t{p[at + 3]});
  };
  size_t ifd = u32(4);
  if (ifd > n || n - ifd < 2) return 1;
  size_t entries = u16(ifd);
  for (size_t i = 0; i < entries; ++i) {
    size_t at = ifd + 2 + 12 * i;
    if (at > n || n - at < 12) return 1;
    if (u16(at) != 0x0112) continue;
    // Orientation is a SHORT (type 3) with count 1, its value inline in the first two bytes.
    if (u16(at + 2) != 3) return 1;
    uint32_t value = u16(at + 8);
    return value >= 1 && value <= 8 ? static_cast<uint8_t>(value) : 1;
  }
  return 1;
}

}  // namespace mmpt::media
