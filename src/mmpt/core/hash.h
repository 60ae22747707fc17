#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace mmpt {

/// Hash bytes with XXH3-64; stable across machines and runs (used in plan hashes, checksums).
uint64_t Hash64(std::span<const std::byte> bytes, uint64_t seed = 0);
uint64_t Hash64(std::string_view text, uint64_t seed = 0);

/// splitmix64's finalizer: a fast, well-mixed 64-bit hash of an integer (used to derive keys
/// and seeded choices; the same function is in bench/vision_dp_bench.py).
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

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
