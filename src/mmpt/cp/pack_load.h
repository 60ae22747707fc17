#pragma once

// cp ▸ load: the one cost of a pack under a CP layout. What each CP rank of a pack computes,
// under the split and the encoder assignments the plan executes; the balancer, the packer's
// choices and the simulator all read a pack's CP cost from here.

#include <span>
#include <vector>

#include "mmpt/cp/thd_split.h"
#include "mmpt/cp/vision_assign.h"

namespace mmpt::cp {

/// The work of one CP rank for one pack, before it waits for any other rank.
struct RankLoad {
  double vision = 0;  // vision encoder cost of the items it encodes (naive: duplicates included)
  double audio = 0;   // audio encoder cost of the clips it encodes
  double llm = 0;     // its share of the pack's LLM cost
  /// Causal (query, key) pairs its LLM shard attends: those of its chunks' queries.
  double attention_pairs = 0;
};

/// Per CP rank of `split`: the encoder cost `vision` and `audio` assign it (an assignment with
/// no ranks assigns nothing), and its share of the pack's `llm_cost`, split over the ranks by
/// the real tokens of their chunks plus `attention_pair_weight` times their causal pairs (the
/// LLM work of one pair over one token's linear work: cost::CostModel::AttentionPairWeight).
std::vector<RankLoad> PackRankLoads(const ThdSplit& split, const EncoderAssignment& vision,
                                    const EncoderAssignment& audio, double llm_cost,
                                    double attention_pair_weight);

/// The pack's cost under its CP layout: per encoder and for the LLM, the most-loaded rank's
/// (the CP group waits for its slowest rank before each stage's collectives). Never the
/// pack's total divided by CP.
RankLoad MostLoaded(const std::vector<RankLoad>& loads);

/// What no assignment of the pack's vision items can beat on its most-loaded rank: the larger
/// of the mean rank load and the largest item (items are indivisible), both as `loads` and
/// `vision` count them (under kNaive the mean includes the duplicated items).
double AtomicVisionFloor(const std::vector<RankLoad>& loads, const EncoderAssignment& vision);

/// Under kNaive, what one sub-sequence makes its CP group encode, duplicates included: Σ over
/// `items` (token offsets within the sub-sequence) of each item's cost times the ranks whose
/// chunks it touches, the sub-sequence padded to `padded_length` (a multiple of 2·cp) and cut
/// into 2·cp chunks. AssignVision's kNaive rule for one sub-sequence before it is packed, where
/// a plan chooses its padding. 0 for a zero `padded_length` or cp.
double NaiveSequenceCost(uint32_t padded_length, uint32_t cp, std::span<const CpImage> items);

}  // namespace mmpt::cp
