#include "mmpt/core/hash.h"

#include <xxhash.h>

namespace mmpt {

uint64_t Hash64(std::span<const std::byte> bytes, uint64_t seed) {
  return XXH3_64bits_withSeed(bytes.data(), bytes.size(), seed);
}

uint64_t Hash64(std::string_view text, uint64_t seed) {
  return XXH3_64bits_withSeed(text.data(), text.size(), seed);
}

Hasher::Hasher(uint64_t seed) : state_(XXH3_createState()) {
  XXH3_64bits_reset_withSeed(static_cast<XXH3_state_t*>(state_), seed);
}

Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void Hasher::Update(std::span<const std::byte> bytes) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), bytes.data(), bytes.size());
}

void Hasher::Update(std::string_view text) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), text.data(), text.size());
}

uint64_t Hasher::Digest() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

}  // namespace mmpt
