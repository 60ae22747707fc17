#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cp/thd_split.h"

namespace mmpt::cp {

/// A run of consecutive LLM tokens, as offsets in the UNPADDED pack.
struct TokenRun {
  uint32_t token_start = 0;
  uint32_t token_count = 0;
};

/// One image of a pack, as the CP stage sees it.
struct CpImage {
  /// First of the image's LLM tokens, as an offset in the UNPADDED pack; the image's embedding
  /// row i feeds token token_start + i. The span lies inside one sub-sequence (sample).
  uint32_t token_start = 0;
  /// LLM tokens of the image = rows of its embedding (after the encoder's spatial merge).
  uint32_t token_count = 0;
  /// Cost of encoding the image, in any unit the caller uses consistently (seconds, FLOPs).
  double vision_cost = 0;
  /// An item whose rows feed several runs of tokens (a sound track's attention window under
  /// Qwen3-Omni's audio in video, its runs between its video's grid steps): the runs after
  /// the first, in token order and in the same sub-sequence, their rows following the first
  /// run's (token_start, token_count are then the first run's). Empty for one run.
  std::vector<TokenRun> more_runs = {};
};

/// Call `f(run, first_row)` for each run of `item` (a CpImage, or anything with its
/// token_start, token_count and more_runs) in token order, `first_row` the item's embedding
/// row that feeds the run's first token.
template <typename Item, typename F>
void ForEachRun(const Item& item, F&& f) {
  f(TokenRun{item.token_start, item.token_count}, 0u);
  uint32_t row = item.token_count;
  for (const TokenRun& run : item.more_runs) {
    f(run, row);
    row += run.token_count;
  }
}

/// Rows of `item`'s embedding (as ForEachRun's): the tokens of all its runs.
template <typename Item>
uint32_t Rows(const Item& item) {
  uint32_t rows = item.token_count;
  for (const TokenRun& run : item.more_runs) rows += run.token_count;
  return rows;
}

/// Who encodes a pack's images when the pack is split over a CP group.
enum class VisionPolicy {
  /// No vision DP: a rank encodes every image any of whose tokens land in its chunks. An image
  /// straddling chunks of several ranks is encoded by EACH of them (an encoder cannot encode
  /// part of an image, and without an exchange every consumer must make its own rows).
  kNaive,
  /// Vision DP as Megatron Bridge does it: the pack's images, in token order, are cut into CP
  /// contiguous runs of equal count (the first n mod CP runs one longer), run r to rank r.
  kCount,
  /// Vision DP as mmpt does it: images to ranks so the most-loaded rank's vision cost is least
  /// (longest-processing-time-first; ties to the rank that consumes more of the image).
  kCost,
};

/// Name a policy as the CLI and reports print it: "naive", "count", "cost".
std::string_view VisionPolicyName(VisionPolicy policy);
/// Parse a policy name. Errors: InvalidArgument naming the unknown value.
Result<VisionPolicy> ParseVisionPolicy(std::string_view name);

/// A run of embedding rows of one image that a consuming rank places contiguously.
struct RowSegment {
  uint32_t image = 0;      // index into the pack's images
  uint32_t row_begin = 0;  // first row of the image's embedding
  uint32_t row_count = 0;
  uint32_t local_offset = 0;  // position of row_begin in the consumer's local token layout
  uint32_t source_rank = 0;   // CP rank that encodes the rows (the consumer itself when local)
};

/// Lists of indices in one array (CSR): list i is values[begin[i], begin[i + 1]).
struct IndexLists {
  std::vector<uint32_t> begin{0};
  std::vector<uint32_t> values;

  size_t size() const { return begin.size() - 1; }
  std::span<const uint32_t> operator[](size_t i) const {
    return std::span<const uint32_t>(values).subspan(begin[i], begin[i + 1] - begin[i]);
  }
  /// Append a list.
  void Add(std::span<const uint32_t> list) {
    values.insert(values.end(), list.begin(), list.end());
    begin.push_back(static_cast<uint32_t>(values.size()));
  }
  bool operator==(const IndexLists&) const = default;
};

/// Vision work and embedding routing of one pack over its CP group.
struct EncoderAssignment {
  VisionPolicy policy = VisionPolicy::kCost;
  /// Per image: the CP ranks that encode it (one, except under kNaive for straddling images).
  IndexLists encoders;
  /// Per CP rank: the images it encodes, ascending.
  std::vector<std::vector<uint32_t>> encoded;
  /// Per CP rank: the summed vision_cost of the images it encodes.
  std::vector<double> rank_cost;
  /// Per CP rank: the embedding rows its LLM shard consumes, in local token order.
  std::vector<std::vector<RowSegment>> consumed;
  /// Perfect-balance bound on the most-loaded rank: max(Σ cost / CP, max image cost).
  double lower_bound = 0;

  /// Most-loaded rank's vision cost.
  double max_cost() const;
  /// Mean vision cost over the CP group (the duplicated work of kNaive included).
  double mean_cost() const;
  /// Rows rank `source` must send to rank `dest` (source ≠ dest), in dest's local order.
  std::vector<RowSegment> RowsToSend(uint32_t source, uint32_t dest) const;
};

/// One CP rank's side of the embedding exchange of a EncoderAssignment: the index lists the
/// all-to-all-v and the gather after it take. The rank's local embeddings are its encoded items'
/// embeddings, ascending, concatenated.
struct ExchangeIndices {
  /// Rows of the local embeddings to send, grouped by destination rank (ascending) and, within
  /// a destination, in its local token order.
  std::vector<int32_t> send_index;
  /// Rows sent to / received from each rank (0 for the rank itself): [CP] each.
  std::vector<int32_t> send_splits;
  std::vector<int32_t> recv_splits;
  /// For each consumed row, in local token order: its row in concat(local embeddings, received).
  std::vector<int32_t> gather_index;
  /// The local token position of each consumed row.
  std::vector<int32_t> positions;
};

/// Check every invariant the exchange relies on, for `assignment`'s encoded and consumed lists
/// over items of `item_rows` embedding rows each: one encoded and one consumed list per CP
/// rank; each rank's encoded items ascending and in range; each segment non-empty, inside its
/// item, from a rank in the group that encodes the item, after the rank's previous segment in
/// local order; every row of every item consumed exactly once in the group. Errors:
/// InvalidArgument naming the rank, item and segment at fault.
Status ValidateRouting(const EncoderAssignment& assignment, std::span<const uint32_t> item_rows);

/// `rank`'s exchange under `assignment`, whose items have `item_rows` embedding rows each: the
/// one derivation of the index lists (the loader ships them in each Batch; Python asks for
/// them for an assignment it holds). Errors: InvalidArgument for a rank outside the group, or
/// those of ValidateRouting.
Result<ExchangeIndices> RankExchange(const EncoderAssignment& assignment,
                                     std::span<const uint32_t> item_rows, uint32_t rank);

/// Check a pack's images against its split: each run non-empty and inside the real tokens of
/// the item's sub-sequence, an item's runs ascending, no two runs overlapping. Errors:
/// InvalidArgument naming the image index.
Status ValidateImages(const ThdSplit& split, std::span<const CpImage> images);

/// Assign the images of a pack split by `split` to its CP ranks under `policy`, and route their
/// embedding rows to the ranks whose shards consume them. Deterministic: the same inputs give
/// the same assignment on every rank. A rank with no images still appears (empty lists), so
/// every rank takes part in every collective. Errors: those of ValidateImages.
Result<EncoderAssignment> AssignVision(const ThdSplit& split, std::span<const CpImage> images,
                                       VisionPolicy policy);

}  // namespace mmpt::cp
