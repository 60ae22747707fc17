#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mmpt/pack/packer.h"

namespace mmpt::pack {

/// What RefillFromSpare changed: moves applied, by kind ("a↔b": a pack items out, b spare in).
struct RefillStats {
  uint64_t added = 0;        // 0↔1 and 0↔2: spare items added to a pack
  uint64_t swapped = 0;      // 1↔1
  uint64_t swapped_1_2 = 0;  // one pack item out, two spare items in
  uint64_t swapped_2_1 = 0;  // two pack items out, one larger spare item in
  uint64_t swapped_2_2 = 0;  // two pack items out, two spare items of a larger sum in
  uint64_t loosened = 0;     // packs whose largest item was moved to the spare first
  uint64_t shifted = 0;      // gap shifts between two kept packs (RefillOptions::shift_gaps)
  /// Moves that brought spare items in (loosening not counted).
  uint64_t moves() const {
    return added + swapped + swapped_1_2 + swapped_2_1 + swapped_2_2 + shifted;
  }
};

/// How RefillFromSpare works (tests turn parts off to check each alone).
struct RefillOptions {
  /// First move every non-full pack's largest item (if at most seq_len / 4, and not locked)
  /// to the spare, so the spare holds every size the packs do, not only the smallest ones that
  /// best-fit decreasing left over. A loosened pack may end with a larger gap than it had (the
  /// total rises on the real corpora: docs/benchmarks.md); without loosening no pack's gap
  /// ever grows.
  bool loosen = true;
  /// After the spare moves, shift gaps between kept packs: a pack P still short of seq_len
  /// gives one of its items x (or none) for a larger item y of another kept pack Q, with
  /// y − x ≤ P's gap, when Q, holding x instead of y, then has a spare move (add 1 or 2,
  /// 1↔1, 1↔2) gaining g ≥ y − x. P gains y − x, Q gains g − (y − x) ≥ 0: no pack's gap
  /// grows, and the tokens in packs rise by g. A gap the spare cannot close in P (its sizes
  /// do not match) moves to a pack where, added to that pack's gap, it can be closed. Both
  /// packs then get spare moves again (Q's first gains at least g).
  bool shift_gaps = true;
};

/// Tighten chosen packs with spare items (those left out of the step, which carry over anyway).
/// After loosening (RefillOptions), packs are visited emptiest first, in two passes; each
/// applies, while one helps, the move with the largest token gain that fits its room: add one
/// or two spare items, or exchange one or two of its items (the first kMaxPairItems for pairs)
/// for one or two spare items of a larger token sum (the displaced items become spare). No move
/// grows a pack's gap: the tokens in packs rise by every move's gain. Items flagged in `locked`
/// never leave their pack. Constraints (length, samples, images) hold throughout. Spare items and
/// pair sums are indexed by tokens (SparePool), so each candidate move costs O(room / 64); the pair
/// index costs O(distinct spare sizes²) to build and is skipped (no moves bringing two items in)
/// above 4096 distinct sizes.
/// Then gaps are shifted between kept packs (RefillOptions::shift_gaps): each short pack,
/// emptiest first, tries at most kShiftTries holders of larger items per own item.
/// Deterministic: moves are compared in a fixed order and ties keep the first; spare lookups
/// take the lowest index among equal sizes.
/// `packs` holds item indices per pack; `spare` item indices, returned sorted ascending.
RefillStats RefillFromSpare(std::span<const PackItem> items, const PackConstraints& constraints,
                            std::span<const uint8_t> locked,
                            std::vector<std::vector<uint32_t>>* packs, std::vector<uint32_t>* spare,
                            RefillOptions options = {});

/// Pack items considered for 2↔1 and 2↔2 exchanges: the first this many of a pack (placement
/// order puts the largest first), so a pack of many small items costs O(kMaxPairItems²).
inline constexpr size_t kMaxPairItems = 12;

/// Other packs' items inspected per item of a short pack when shifting gaps (bounds the cost
/// of a pack to O(items × kShiftTries) spare lookups).
inline constexpr size_t kShiftTries = 8;

}  // namespace mmpt::pack
