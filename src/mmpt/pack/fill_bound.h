#pragma once

#include <cstdint>
#include <span>

#include "mmpt/pack/packer.h"

namespace mmpt::pack {

/// An upper bound on what `packs` packs of constraints.seq_len tokens can hold when filled
/// with items of `items`, each at most once: no packing of these items (a step's pool) into
/// that many packs places more tokens.
struct FillBound {
  uint64_t tokens = 0;      // min(Σ item tokens, packs × best_pack_tokens)
  uint64_t best_pack_tokens = 0;  // the largest token sum ≤ seq_len of a subset of the items
  double efficiency = 0;    // tokens / (packs × seq_len)
  double seconds = 0;       // wall time to compute it
};

/// Compute the bound: a pack holds a subset of the items, so none holds more than the largest
/// subset sum ≤ seq_len (found by a bitset subset-sum over the distinct sizes, each taken at
/// most min(count, seq_len / size) times: O(Σ that × seq_len / 64) word operations, stopping
/// once seq_len is reached), and all packs together hold at most every item's tokens. Image and
/// sample limits are relaxed (dropping a limit never lowers the bound). It is exact when the
/// items are plentiful and small beside seq_len (the bound is then 100%, reached up to
/// rounding), and loosest when few combinations of large items fill a pack.
FillBound BoundFill(std::span<const PackItem> items, uint32_t seq_len, uint64_t packs);

}  // namespace mmpt::pack
