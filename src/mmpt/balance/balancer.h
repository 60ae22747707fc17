#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::balance {

/// How the ranks of one step wait for each other (DESIGN.md, "Balance: what is minimized").
enum class SyncModel : uint8_t {
  kStep = 0,       // ranks meet only at the gradient all-reduce
  kMicrostep = 1,  // every micro-step is a barrier within a sync group (e.g. the EP group)
  kPipeline = 2,   // pipeline stages: micro-step costs equalized, light ones at both ends
};

/// Name a sync model as the CLI spells it ("step", "microstep", "pipeline").
std::string_view SyncModelName(SyncModel model);
/// Parse "step", "microstep" or "pipeline". Errors: InvalidArgument naming the bad value.
Result<SyncModel> ParseSyncModel(std::string_view name);

/// A pack's cost on one rank, in seconds: vision encoder and LLM, forward + backward.
struct PackCost {
  double vision = 0;
  double llm = 0;
};

/// The slots of one global batch: dp ranks × ga micro-steps × mbs packs. Ranks r with equal
/// r / group form a sync group (the EP group); under kMicrostep they wait for each other every
/// micro-step. pp is the number of pipeline stages (kPipeline).
struct Grid {
  uint32_t dp = 1;
  uint32_t ga = 1;
  uint32_t mbs = 1;
  uint32_t group = 1;
  uint32_t pp = 1;
  SyncModel sync = SyncModel::kMicrostep;

  uint64_t slots() const { return uint64_t{dp} * ga * mbs; }
  /// Errors: InvalidArgument for a zero size or dp not divisible by group.
  Status Validate() const;
};

/// An assignment of packs to slots: assignment[(rank × ga + micro) × mbs + k] = pack index.
using Assignment = std::vector<uint32_t>;

/// Balance `packs` (exactly grid.slots() of them) over the grid, minimizing the step time of
/// grid.sync:
/// - kStep: longest-processing-time first over ranks, each rank taking ga × mbs packs.
/// - kMicrostep: packs sorted into bands by vision cost and by LLM cost within a band, cut into
///   cells of group × mbs similar packs (one sync group's micro-step), the band count chosen to
///   minimize Σ (max vision + max LLM); then cells go to groups longest first.
/// - kPipeline: as kStep across replicas, then each replica's micro-steps ordered light, heavy,
///   light so the pipeline's fill and drain see the light ones.
/// Deterministic. Errors: InvalidArgument if packs.size() != grid.slots() or the grid is bad.
Result<Assignment> Balance(std::span<const PackCost> packs, const Grid& grid);

/// The step-time estimate of an assignment and how far it is from perfect balance.
struct Estimate {
  double step_seconds = 0;          // under the grid's sync model
  double lower_bound_seconds = 0;   // every rank equally loaded, no one ever waits
  double max_vision_imbalance = 1;  // max over (sync group, micro-step) of max/mean vision
  double max_llm_imbalance = 1;     // same for LLM
  double mean_vision_imbalance = 1; // mean over (sync group, micro-step) of max/mean vision
  double mean_llm_imbalance = 1;
};

/// Estimate an assignment's step time. Imbalance is measured within groups of grid.group ranks
/// (the EP group) whatever the sync model. The step-time models:
/// - kStep: max over ranks of Σ over micro-steps of (vision + LLM).
/// - kMicrostep: max over groups of Σ over micro-steps of (max vision + max LLM in the group).
/// - kPipeline (1F1B): per replica Σ c/pp + (pp − 1)/pp × (c_first/3 + 2·c_last/3), max over
///   replicas, where c is a micro-step's cost on one rank holding the whole model.
Estimate Evaluate(std::span<const PackCost> packs, std::span<const uint32_t> assignment,
                  const Grid& grid);

}  // namespace mmpt::balance
