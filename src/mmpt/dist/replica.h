#pragma once

// Who loads what in a model-parallel job: a rank's place in the (DP, CP, TP, PP) grid, the
// replica group that shares one load (the TP × PP ranks of one (DP rank, CP rank)), and which
// of a Batch's fields each pipeline stage needs. The loader of a group is its first rank; the
// others receive its batches (comm/shm_ring.h on a node, a broadcast across nodes).

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/dist/batch_wire.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::dist {

/// The parallel dimensions of a global rank, fastest-varying first (Megatron's "tp-cp-ep-dp-pp"
/// with EP left out: expert parallelism reuses the DP × CP ranks and shares their data).
enum class RankDim : uint8_t { kTp, kCp, kDp, kPp };

/// A rank order: the four dimensions, fastest-varying first.
using RankOrder = std::array<RankDim, 4>;
/// Megatron's default order, tp-cp-dp-pp.
inline constexpr RankOrder kMegatronOrder = {RankDim::kTp, RankDim::kCp, RankDim::kDp,
                                             RankDim::kPp};
/// Parse "tp-cp-dp-pp" (any permutation of tp, cp, dp, pp; an "ep" entry is skipped, as EP
/// shares the DP × CP ranks). Errors: InvalidArgument naming the order.
Result<RankOrder> ParseRankOrder(std::string_view text);
/// "tp-cp-dp-pp".
std::string RankOrderName(const RankOrder& order);

/// What a pipeline stage consumes: the first stage the model's inputs, the last its targets,
/// stages between neither (only the sequence boundaries and shapes), one stage both.
enum class StageRole : uint8_t { kOnly, kFirst, kMiddle, kLast };
std::string_view StageRoleName(StageRole role);
/// The Batch fields a stage needs (batch_wire.h): kAllFields for kOnly, kInputFields for
/// kFirst, kTargetFields for kLast, kShapeFields for kMiddle (each includes kShapeFields).
uint32_t FieldsOf(StageRole role);

/// One global rank's coordinates.
struct RankPlace {
  uint32_t rank = 0;
  uint32_t dp = 0;
  uint32_t cp = 0;
  uint32_t tp = 0;
  uint32_t pp = 0;
  StageRole role = StageRole::kOnly;
  bool operator==(const RankPlace&) const = default;
};

/// The ranks of a job laid out as `layout` (dp × cp × tp × pp of them) in `order`.
class RankGrid {
 public:
  /// Errors: InvalidArgument for a zero size.
  static Result<RankGrid> Create(const plan::Layout& layout, RankOrder order = kMegatronOrder);

  uint32_t world_size() const { return world_; }
  /// Errors: InvalidArgument when `rank` is outside the world, naming both.
  Result<RankPlace> Place(uint32_t rank) const;
  /// The global rank at these coordinates.
  uint32_t RankAt(uint32_t dp, uint32_t cp, uint32_t tp, uint32_t pp) const;
  /// The ranks that share one load: every (tp, pp) of (dp, cp), the loading rank (tp 0, pp 0)
  /// first, then by stage and TP rank.
  std::vector<uint32_t> Replica(uint32_t dp, uint32_t cp) const;
  /// The loading rank of every (DP rank d, CP rank c), at d · cp + c (the index the exchange's
  /// trainer peers and the plan's ranks use): each replica's first rank.
  std::vector<uint32_t> LoadingRanks() const;

 private:
  RankGrid(const plan::Layout& layout, RankOrder order);
  uint32_t SizeOf(RankDim dim) const;

  RankOrder order_{};
  uint32_t dp_ = 1, cp_ = 1, tp_ = 1, pp_ = 1;
  uint32_t world_ = 1;
};

}  // namespace mmpt::dist
