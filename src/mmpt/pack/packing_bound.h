#pragma once

#include <cstdint>
#include <span>

#include "mmpt/core/status.h"

namespace mmpt::pack {

/// How full packs can be when every item must be packed: a lower bound on the packs of seq_len
/// tokens any packing of all the items needs, and the efficiency that leaves.
struct PackingBound {
  double packs = 0;       // max(LP bound, Σ tokens / seq_len): any packing uses ≥ ⌈packs⌉
  double efficiency = 0;  // Σ item tokens / (⌈packs⌉ × seq_len): no packing fills more
  uint32_t grain_tokens = 1;  // item sizes rounded down to multiples of this (a relaxation)
  uint32_t patterns = 0;      // pack patterns generated
  double seconds = 0;         // wall time to compute it
};

/// Bound the packing of every item of `item_tokens` (each ≤ seq_len) into packs of `seq_len`
/// tokens: the linear-programming relaxation of bin packing (Gilmore–Gomory), solved by column
/// generation. GLPK's simplex solves the master problem over pack patterns; an unbounded
/// knapsack by dynamic programming over the item sizes prices the next pattern. Sizes are
/// rounded down to a grain (seq_len / 2048, at least 1 token) so pricing is O(sizes × 2048): a
/// relaxation, so the bound stays valid, loosened by under a grain per item. Stops when the
/// pattern prices prove the master's value within 0.02% of the LP optimum (Farley's bound, valid
/// at any iteration), and returns the best proven bound. Planning never needs it: it says how
/// far from the best possible a plan's packing is, on corpora whose items are a large share of
/// a pack (a photo post of 4–6 photos fills more than half of an 8K pack alone).
/// Errors: InvalidArgument for an item over seq_len or seq_len 0; Internal if the LP solver
/// fails.
Result<PackingBound> BoundPacking(std::span<const uint32_t> item_tokens, uint32_t seq_len);

}  // namespace mmpt::pack
