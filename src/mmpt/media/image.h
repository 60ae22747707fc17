#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace mmpt::media {

/// An allocator whose resize() leaves new elements uninitialized, so buffers that a decoder or
/// resampler overwrites completely are not zero-filled first (megabytes per image).
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}  // NOLINT: rebinding
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// Pixel bytes; see DefaultInitAllocator.
using PixelBuffer = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;

/// An 8-bit image in memory: rows top to bottom, pixels interleaved, `width * channels` bytes
/// per row with no padding. Channels: 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA.
struct Image {
  uint32_t width = 0;
  uint32_t height = 0;
  uint32_t channels = 3;
  PixelBuffer pixels;

  size_t row_bytes() const { return size_t{width} * channels; }
  /// Set the shape and size the buffer for it, reusing its capacity (no zero-fill).
  void Reset(uint32_t new_width, uint32_t new_height, uint32_t new_channels) {
    width = new_width;
    height = new_height;
    channels = new_channels;
    pixels.resize(row_bytes() * height);
  }
  uint8_t* row(uint32_t y) { return pixels.data() + y * row_bytes(); }
  const uint8_t* row(uint32_t y) const { return pixels.data() + y * row_bytes(); }
};

}  // namespace mmpt::media
