#pragma once

// Who loads what in a model-parallel job: a rank's place in the (DP, CP, TP, PP) grid, the
// replica group that shares one load (the TP × PP ranks of one (DP rank, CP rank)), and which
// of a Batch's fields each pipeline stage needs. The loader of a group is its first rank; the
// others receive its batches (comm/shm_ring.h on a node, a broadcast across nodes).

#include <array>
#include <cstdint>
#include <span>
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
  uint32_t dp() const { return dp_; }
  uint32_t cp() const { return cp_; }
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

/// A broadcast group of one replica: its loading rank first, then one receiving rank on each
/// other node whose ranks need `fields`.
struct BroadcastGroup {
  std::vector<uint32_t> ranks;
  uint32_t fields = 0;
  bool operator==(const BroadcastGroup&) const = default;
};

/// How one rank takes part in sharing its replica's load (python/mmpt/replica.py carries it
/// out). On each node, the replica's first rank there (the loading rank on its own node, the
/// receiving rank elsewhere) feeds a shared-memory ring that the replica's other ranks on that
/// node read; the loading rank broadcasts to each other node once, grouped by the fields that
/// node's ranks need.
struct ReplicaShare {
  /// Every replica's broadcast groups, in the order every rank creates them (collectively).
  std::vector<BroadcastGroup> groups;
  uint32_t loading_rank = 0;
  /// The groups this rank broadcasts to (it is the loading rank), indices into `groups`.
  std::vector<size_t> sends;
  /// The group this rank receives the loading rank's broadcasts in, or -1.
  int64_t source = -1;
  /// This node's ring: its writer (the replica's first rank on the node) and readers.
  uint32_t ring_writer = 0;
  std::vector<uint32_t> ring_readers;
  /// The fields the ring's readers need (0 without readers).
  uint32_t ring_fields = 0;
  bool operator==(const ReplicaShare&) const = default;
};

/// `rank`'s ReplicaShare, from every rank's node label `nodes` (one per rank of `grid`).
/// Errors: InvalidArgument for a rank outside the grid or a node list of another size.
Result<ReplicaShare> PlanReplicaShare(const RankGrid& grid, std::span<const std::string> nodes,
                                      uint32_t rank);

}  // namespace mmpt::dist
