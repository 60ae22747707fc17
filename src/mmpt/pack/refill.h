#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mmpt/pack/packer.h"

namespace mmpt::pack {

/// What RefillFromSpare changed.
struct RefillStats {
  uint64_t added = 0;    // spare items moved into a pack
  uint64_t swapped = 0;  // pack items exchanged for a larger spare item
};

/// Tighten chosen packs with spare items (those left out of the step, which carry over anyway):
/// packs with the most room first, each adds the largest spare item that fits, then exchanges
/// one of its items for the largest spare item that fits in its place and is larger (the
/// displaced item becomes spare), a few rounds while that helps. Items flagged in `locked`
/// never leave their pack. Constraints (length, samples, images) hold throughout.
/// O((packs × items per pack + spare) log spare). Deterministic: ties go to the lowest index.
/// `packs` holds item indices per pack; `spare` item indices, returned sorted ascending.
RefillStats RefillFromSpare(std::span<const PackItem> items, const PackConstraints& constraints,
                            std::span<const uint8_t> locked, std::vector<std::vector<uint32_t>>* packs,
                            std::vector<uint32_t>* spare);

}  // namespace mmpt::pack
