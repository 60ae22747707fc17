#pragma once

// What each exchange peer sends and receives at a step, from the plan alone (identical on every
// peer, no communication), and which media each CP rank decodes.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/dist/placement.h"
#include "mmpt/plan/step_plan.h"
#include "mmpt/store/dataset.h"

namespace mmpt::dist {

/// What one peer sends and receives at one step. Samples are named by their place in the
/// plan (an index into StepPlan::sequences), in plan order: DP rank, micro-step, pack slot,
/// place in the pack. Under CP a sample goes to each CP rank of its DP rank.
struct ExchangeLists {
  std::vector<std::vector<uint32_t>> send;     // per destination peer
  std::vector<std::vector<uint32_t>> receive;  // per holder peer
};

/// The shard (manifest order) that holds sample `index` of source `source`, as the planner
/// numbers samples. Errors: OutOfRange for a sample the dataset does not have.
using ShardOf = std::function<Result<size_t>(uint32_t source, uint64_t index)>;
/// `dataset`'s ShardOf (its `.meta` suffices).
ShardOf ShardsOf(const store::Dataset& dataset);

/// The lists of `peer` at `plan`'s step: peer p sends to the trainer of (DP rank d, CP rank c)
/// exactly the samples of d's packs whose shard p holds; each trainer receives all of its
/// packs' samples from their holders. `trainer_peer[d · cp + c]` is the peer that trains (d, c)
/// (dp × cp entries, distinct). A pure function of its inputs, O(the step's samples): every
/// peer computes its lists alike, with no communication. Errors: InvalidArgument
/// (trainer_peer of the wrong size, repeated or out of range; peer out of range), those of
/// `shard_of`, and OutOfRange for a shard outside the placement.
Result<ExchangeLists> PlanExchangeLists(const plan::StepPlan& plan, const Placement& placement,
                                        const ShardOf& shard_of,
                                        std::span<const uint32_t> trainer_peer, uint32_t peer);

/// Which media items of planned sample `sequence` (in pack `pack`) CP rank `cp_rank` decodes,
/// by the sample's media index (1: it does): the vision items and audio clips the plan's cp
/// stage assigns it (PackCp::vision, PackCp::audio); every item at CP 1. `media` is the
/// sample's `.meta` records; a grouped video is marked at its first record when the rank
/// decodes any of its groups, and never at the others (its bytes travel once). What the
/// exchange sends that rank.
std::vector<uint8_t> DecodedMedia(const plan::StepPlan& plan, size_t pack, uint32_t sequence,
                                  uint32_t cp_rank, std::span<const store::MediaMeta> media);

}  // namespace mmpt::dist
