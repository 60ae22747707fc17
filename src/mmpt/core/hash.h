#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace mmpt {

/// Hash bytes with XXH3-64; stable across machines and runs (used in plan hashes, checksums).
uint64_t Hash64(std::span<const std::byte> bytes, uint64_t seed = 0);
uint64_t Hash64(std::string_view text, uint64_t seed = 0);

/// Incremental XXH3-64 over a sequence of updates; equal to Hash64 of the concatenation.
class Hasher {
 public:
  explicit Hasher(uint64_t seed = 0);
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void Update(std::span<const std::byte> bytes);
  void Update(std::string_view text);
  template <typename T>
  void UpdatePod(const T& value) {
    Update(std::span<const std::byte>(reinterpret_cast<const std::byte*>(&value), sizeof(T)));
  }
  uint64_t Digest() const;

 private:
  void* state_;  // XXH3_state_t*, kept opaque so xxhash.h stays out of this header
};

}  // namespace mmpt
