#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::pack {

/// One thing to pack: a sample's LLM tokens and its number of images. Its identity is its
/// position in the input span.
struct PackItem {
  uint32_t tokens = 0;
  uint32_t images = 0;
};

/// What a pack may hold.
struct PackConstraints {
  uint32_t seq_len = 8192;   // tokens per pack
  uint32_t max_samples = 0;  // samples per pack; 0 = no limit
  uint32_t max_images = 0;   // images per pack; 0 = no limit
};

enum class Algorithm : uint8_t {
  kFirstFitDecreasing,  // leftmost open pack that fits (a max segment tree over packs)
  kBestFitDecreasing,   // the fitting pack with the least room left (buckets by room + bitset)
};

/// Name as the CLI spells it ("ffd", "bfd"); parse errors are InvalidArgument.
std::string_view AlgorithmName(Algorithm algorithm);
Result<Algorithm> ParseAlgorithm(std::string_view name);

/// Packs as CSR: pack p holds items[pack_begin[p] .. pack_begin[p + 1]), in placement order
/// (largest first); pack_tokens[p] is its token sum.
struct Packing {
  std::vector<uint32_t> pack_begin{0};
  std::vector<uint32_t> items;
  std::vector<uint32_t> pack_tokens;

  size_t num_packs() const { return pack_tokens.size(); }
  std::span<const uint32_t> Pack(size_t p) const {
    return std::span<const uint32_t>(items).subspan(pack_begin[p],
                                                    pack_begin[p + 1] - pack_begin[p]);
  }
};

/// Check that every item fits an empty pack. Errors: InvalidArgument naming the first item
/// that can never fit (zero tokens, more tokens than seq_len, more images than max_images) —
/// apply the over-long policy first — or a zero seq_len, or more than 2³² − 1 items.
Status ValidateItems(std::span<const PackItem> items, const PackConstraints& constraints);

/// Pack every item: items sorted by tokens, largest first (ties by input position), each placed
/// by `algorithm` or opening a new pack. O(n log n) (counting sort by tokens, O(log) placement);
/// an item whose image count rules out the first candidate pack scans on to the next one.
/// Deterministic: the same input gives the same packing on every machine.
/// Errors: those of ValidateItems.
Result<Packing> PackItems(std::span<const PackItem> items, const PackConstraints& constraints,
                          Algorithm algorithm = Algorithm::kBestFitDecreasing);

/// Packing quality.
struct PackStats {
  uint64_t packs = 0;
  uint64_t tokens = 0;
  uint64_t lower_bound_packs = 0;  // ⌈tokens / seq_len⌉: no packing can use fewer
  double efficiency = 0;           // tokens / (packs × seq_len)
};
PackStats ComputeStats(const Packing& packing, uint32_t seq_len);

/// Whether items of these token counts are large beside seq_len: their median is at least
/// seq_len / kLargeItemFraction (photo posts, interleaved documents). Such items fill a pack
/// only in certain combinations, so a pool of them needs more choice (plan::Planner). O(n);
/// reorders `tokens` (a copy the caller hands over).
bool LargeItems(std::vector<uint32_t> tokens, uint32_t seq_len);
inline constexpr uint32_t kLargeItemFraction = 4;

}  // namespace mmpt::pack
