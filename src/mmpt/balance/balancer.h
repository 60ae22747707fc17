#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::balance {

/// How the ranks of one step wait for each other (docs/design.md, "Cost and balance").
enum class SyncModel : uint8_t {
  kStep = 0,       // ranks meet only at the gradient all-reduce
  kMicrostep = 1,  // every micro-step is a barrier within a sync group (e.g. the EP group)
  kPipeline = 2,   // pipeline stages: micro-step costs equalized, light ones at both ends
};

/// Name a sync model as the CLI spells it ("step", "microstep", "pipeline").
std::string_view SyncModelName(SyncModel model);
/// Parse "step", "microstep" or "pipeline". Errors: InvalidArgument naming the bad value.
Result<SyncModel> ParseSyncModel(std::string_view name);

/// The encoders of a pack's cost vector, as indices into PackCost::encoder.
inline constexpr size_t kVisionEncoder = 0;  // images and videos
inline constexpr size_t kAudioEncoder = 1;
inline constexpr size_t kNumEncoders = 2;

/// A pack's cost on one rank, in seconds, forward + backward: a vector of one entry per encoder
/// and the LLM. The encoders and the LLM run one after the other, and under kMicrostep each
/// waits at its own collectives, so each is balanced on its own.
struct PackCost {
  std::array<double, kNumEncoders> encoder{};
  double llm = 0;

  PackCost() = default;
  /// A pack with only vision encoder seconds (no audio).
  PackCost(double vision, double llm) : llm(llm) { encoder[kVisionEncoder] = vision; }
  PackCost(const std::array<double, kNumEncoders>& encoder, double llm)
      : encoder(encoder), llm(llm) {}

  double vision() const { return encoder[kVisionEncoder]; }
  double audio() const { return encoder[kAudioEncoder]; }
  /// Σ of every encoder and the LLM: the pack's time on a rank that waits for no one.
  double Total() const {
    double total = llm;
    for (double e : encoder) total += e;
    return total;
  }
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
/// - kStep: longest-processing-time first over ranks by total cost (a rank's encoders and LLM
///   add up; it waits only at the end), each rank taking ga × mbs packs.
/// - kMicrostep: packs sorted into nested bands, one level per dimension of the cost vector
///   (each encoder that has any cost, then the LLM: sorted by the first, cut into bands of whole
///   cells, each band sorted by the next, ...), cut into cells of group × mbs similar packs (one
///   sync group's micro-step); the band counts (powers of 2) and, with several encoders, their
///   order are chosen to minimize Σ over cells of (Σ over encoders of max + max LLM); then cells
///   go to groups longest first. With one encoder this is bands by encoder cost, LLM within.
/// - kPipeline: as kStep across replicas, then each replica's micro-steps ordered light, heavy,
///   light so the pipeline's fill and drain see the light ones.
/// Deterministic. Errors: InvalidArgument if packs.size() != grid.slots() or the grid is bad.
Result<Assignment> Balance(std::span<const PackCost> packs, const Grid& grid);

/// The step-time estimate of an assignment and how far it is from perfect balance.
struct Estimate {
  double step_seconds = 0;         // under the grid's sync model
  double lower_bound_seconds = 0;  // every rank equally loaded, no one ever waits
  /// Per encoder: max over (sync group, micro-step) of max/mean encoder seconds (1 where an
  /// encoder has no cost).
  std::array<double, kNumEncoders> max_encoder_imbalance{1, 1};
  /// Per encoder: mean over (sync group, micro-step) of max/mean.
  std::array<double, kNumEncoders> mean_encoder_imbalance{1, 1};
  double max_llm_imbalance = 1;  // as max_encoder_imbalance, for the LLM
  double mean_llm_imbalance = 1;
};

/// Estimate an assignment's step time. Imbalance is measured within groups of grid.group ranks
/// (the EP group) whatever the sync model. The step-time models:
/// - kStep: max over ranks of Σ over micro-steps of (Σ encoders + LLM).
/// - kMicrostep: max over groups of Σ over micro-steps of (Σ over encoders of the group's max
///   + the group's max LLM).
/// - kPipeline (1F1B): per replica Σ c/pp + (pp − 1)/pp × (c_first/3 + 2·c_last/3), max over
///   replicas, where c is a micro-step's cost on one rank holding the whole model.
Estimate Evaluate(std::span<const PackCost> packs, std::span<const uint32_t> assignment,
                  const Grid& grid);

/// A lower bound on the step time of any assignment of `packs` under grid.sync = kMicrostep: a
/// sync group's micro-step waits, in each stage (each encoder, the LLM), for its heaviest pack
/// at least, and no assignment has a smaller Σ over cells of that heaviest pack than packs
/// sorted by the stage and cut into cells of group × mbs (per stage; the stages' sums add up);
/// the step is at least the mean over sync groups (with mbs > 1 a rank's micro-step holds
/// several packs, and the bound, still valid, is weaker). 0 under kStep and kPipeline.
double MicrostepLowerBound(std::span<const PackCost> packs, const Grid& grid);

}  // namespace mmpt::balance
