#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/cp/vision_assign.h"
#include "mmpt/pack/overlong.h"
#include "mmpt/pack/packer.h"
#include "mmpt/plan/placed_sample.h"
#include "mmpt/plan/sample_order.h"
#include "mmpt/plan/sample_padding.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::plan {
namespace internal {
struct PackList;         // pack_list_internal.h
class PlaceableCounter;  // pack_list_internal.h
class RowSet;            // planner.cc
}  // namespace internal

/// The pool slack of a step whose pool holds large items (pack::LargeItems) when
/// PlannerConfig::pool_slack is smaller: such items fill a pack only in certain combinations,
/// and a larger pool lets the fullest packs be chosen (docs/benchmarks.md, photo posts).
/// Without allow_repeat only on a corpus of several pools (a step holds each sample once).
inline constexpr double kLargeItemPoolSlack = 0.25;

/// Everything that decides a plan besides the corpus and the cost model.
struct PlannerConfig {
  Layout layout;
  uint64_t seed = 0;
  pack::OverlongPolicy overlong = pack::OverlongPolicy::kTruncate;
  pack::Algorithm algorithm = pack::Algorithm::kBestFitDecreasing;
  uint32_t max_samples_per_pack = 0;   // 0 = no limit
  uint32_t max_images_per_pack = 0;    // 0 = no limit
  std::vector<double> source_weights;  // per source; empty = proportional to source size
  double pool_slack = 0.002;           // draw this fraction of tokens beyond the step's capacity
                                       // (at least kLargeItemPoolSlack for large items)
  uint32_t max_carry_steps = 3;        // a sample carried this many steps is placed first
  uint32_t vanilla_buffer = 1024;      // vanilla: samples per rank in its packing buffer
  /// Under CP (layout.cp > 1): how the cp stage assigns a pack's images to the CP ranks.
  /// mmpt uses this; vanilla always uses cp::VisionPolicy::kCount, as Megatron Bridge does.
  cp::VisionPolicy cp_vision = cp::VisionPolicy::kCost;
  /// Let a step hold a sample more than once: the stream is then packed as it is drawn. Off,
  /// a step holds each sample at most once (Planner says how); on, a corpus smaller than a
  /// step can be planned (a benchmark of a large cluster on a small corpus, a small source
  /// weighted up beyond its size), at the price of repeats within a step.
  bool allow_repeat = false;

  /// Errors: InvalidArgument for a bad layout or option.
  Status Validate() const;
};

/// What one planned step did.
struct StepStats {
  uint64_t drawn = 0;              // new samples taken from the stream this step
  uint64_t placed = 0;             // samples in the step's packs
  uint64_t carried = 0;            // samples carried into the next step (deferred included)
  uint64_t deferred = 0;           // drawn again while the step held them: kept for a later step
  uint64_t dropped = 0;            // over-long samples dropped this step (StepPlan::dropped)
  uint64_t truncated = 0;          // over-long samples truncated this step
  uint64_t packs = 0;              // dp × ga × mbs
  uint64_t candidate_packs = 0;    // packs the pool made before choosing the step's
  uint64_t tokens = 0;             // Σ tokens of the step's packs
  uint64_t lower_bound_packs = 0;  // ⌈tokens / seq_len⌉
  double efficiency = 0;           // tokens / (packs × seq_len)
  uint32_t max_carry_age = 0;      // steps the oldest carried sample has waited
  bool source_exhausted = false;   // drawing ended at a source the step held all of (Planner)
  double plan_seconds = 0;         // wall time of planning this step
  /// Its phases (the mmpt planner's; they sum to about plan_seconds): drawing the pool, packing
  /// it and choosing the step's packs, the cp stage (splits, vision assignment and what a CP
  /// group pays), balancing and assembling the plan.
  struct Phases {
    double draw = 0, pack = 0, cp = 0, balance = 0, assemble = 0;
  } phase_seconds;
};

/// The mmpt planner: the pure function every rank runs for step s, with no communication.
/// Each step draws samples from the blended, seeded stream (plus what the last step carried),
/// applies the over-long policy (a pool of large items, pack::LargeItems, draws on to
/// kLargeItemPoolSlack), packs the pool with best-fit decreasing, keeps the dp × ga × mbs
/// fullest packs (carrying the rest's samples over), balances them over
/// (rank, micro-step) and assembles the StepPlan.
///
/// Each sample at most once per step (unless PlannerConfig::allow_repeat): the step's packs,
/// over every rank and micro-step and carried samples included, hold each (source, index)
/// once. When the stream draws a sample the step already holds (it wrapped into the next
/// epoch while the last one's samples are still in the step), that draw is deferred: carried
/// into the next step like a sample left out, never repeated and never lost. So the corpus
/// must fill a step with distinct samples, which Create checks:
/// - no pack is empty: a micro-batch without tokens breaks the trainer (THD cu_seqlens, loss
///   normalized per token) and the loader refuses one, so a step needs dp × ga × mbs samples
///   that fit at least;
/// - no source is asked by the blend for more samples a step than it has (its share of a
///   step's draws at the blend's mean tokens per draw): with one source, the corpus holds a
///   step's tokens; with several, a small source is not weighted beyond its size. Packs left
///   short for want of samples would waste the step (a 25k-sample corpus fills 14% of a
///   67M-token step) and let the stream run ahead of the steps.
/// Near that limit a step can still draw a sample of a source whose every sample it holds:
/// the draw is deferred, and the step ends short of its tokens once it has a sample per pack
/// (its fullest packs halved if it has fewer packs than it needs). Planning never fails for
/// want of samples after Create.
/// With allow_repeat the stream is packed as drawn (a sample may come back in any pack, one
/// pack included) and none of this applies.
///
/// Each sample is checked and costed when drawn (cost::CostSample): what a planner holds and
/// computes grows with a step, not with the corpus (the table may be a mapped file of billions
/// of samples). The table and model are borrowed and must outlive the planner. Not
/// thread-safe; one planner per thread.
class Planner {
 public:
  /// Errors: InvalidArgument for a bad config (naming it), a corpus of which every sample is
  /// dropped, or (unless allow_repeat) one that cannot fill a step with distinct samples
  /// (naming the numbers and the fixes); a source's mean tokens for that check are its first
  /// rows' (internal::PlaceableCounter). Errors of a row it reads (Corrupt, naming the file and
  /// sample; InvalidArgument for an item the model cannot cost).
  static Result<Planner> Create(const cost::SampleTable& table, const cost::CostModel& model,
                                PlannerConfig config);
  Planner(Planner&&) noexcept;
  Planner& operator=(Planner&&) noexcept;
  ~Planner();

  /// Plan step next_step() and advance. `recycled`: a plan no longer used (a loader's oldest),
  /// whose memory the new plan takes over, so a long run does not fault fresh pages in every
  /// step; the plan does not depend on it. Errors: those of a drawn row (as Create's), packing,
  /// balance and the cp stage.
  Result<StepPlan> PlanStep(StepPlan recycled = {});
  /// Statistics of the last PlanStep().
  const StepStats& last_stats() const { return stats_; }
  uint64_t next_step() const { return step_; }
  /// Samples waiting for the next step (carried over), in pool order.
  std::span<const PlacedSample> carried() const { return carry_; }
  /// The fraction of draws that come from source `s`: its blend weight, normalized
  /// (SampleOrder::Share; by default proportional to the source's size).
  double SourceShare(uint32_t s) const { return order_.Share(s); }

  /// Serialize the planner's state before next_step() (the step, stream cursors, carried
  /// samples and the settings it holds under): a few KB.
  std::string SaveState() const;
  /// The state inside step `current.step`, before its micro-step `micro_step` (1 ≤ micro_step <
  /// ga): where a loader that delivered the earlier micro-steps of every rank stands. `before`
  /// and `after` are this planner's SaveState() just before and just after planning `current`.
  /// The state holds both: restored under the same settings it resumes at that micro-step of
  /// the same plan; under another layout the samples of the micro-steps before it count as
  /// consumed and the step's others are carried into the next step. A few bytes per unconsumed
  /// sample. Errors: InvalidArgument when the states or plan are not of consecutive steps of
  /// this planner, or micro_step is out of range.
  Result<std::string> StateWithinStep(std::string_view before, std::string_view after,
                                      const StepPlan& current, uint32_t micro_step) const;

  /// Where a restored planner resumes: the step it plans next and the first micro-step of it a
  /// loader delivers. `changed` names each setting that differs from the saved state's
  /// ("dp 8 → 4"); empty for an exact resume.
  struct ResumePoint {
    uint64_t step = 0;
    uint32_t micro_step = 0;
    std::vector<std::string> changed;
  };
  /// Resume from SaveState() or StateWithinStep() bytes.
  /// - Under the settings it was saved under, later plans are byte-identical to an
  ///   uninterrupted run, from the saved micro-step.
  /// - Elastic: under another layout (dp, tp, pp, cp, ep, ga, mbs, seq_len, sync) or packing
  ///   option, the sample stream goes on where it stood: no sample of the epoch is lost or
  ///   repeated. Carried samples, and those of a step saved inside, enter the next step's pool,
  ///   fitted again under the new seq_len (one that no longer fits is listed in that step's
  ///   `dropped`, as a draw would be). A state saved inside step s resumes at step s + 1,
  ///   micro-step 0.
  /// Errors: Corrupt (bad magic, version, size or checksum; an older format is named as such),
  /// InvalidArgument (state of another corpus, seed or blend, naming each setting that
  /// differs: "saved at seed 1, now seed 2"; nothing is restored).
  Result<ResumePoint> RestoreState(std::string_view bytes);

 private:
  Planner(const cost::SampleTable& table, const cost::CostModel& model, PlannerConfig config,
          SampleOrder order, internal::PlaceableCounter placeable);

  struct Pool;
  /// PlanStep's first phase, into pool_: last step's carry, then new samples until the step's
  /// capacity is covered (without allow_repeat a sample the pool holds is deferred).
  Status DrawPool();
  /// Its second: pack the pool and keep the step's packs (pool_->packs: those holding a
  /// long-carried sample, then the fullest, refilled from the rest); everything else is
  /// carried.
  Status PackPool();

  const cost::SampleTable* table_;
  const cost::CostModel* model_;
  PlannerConfig config_;
  SamplePadding padding_;  // each sample's padding under CP (naive policy), set as it joins a pool
  SampleOrder order_;
  uint64_t step_ = 0;
  std::vector<PlacedSample> carry_;  // samples carried into the next step
  std::vector<uint8_t> carry_age_;   // steps each has been carried
  // What each source can put in packs, counted as far as the planner asked.
  std::unique_ptr<internal::PlaceableCounter> placeable_;
  // Without allow_repeat: the rows carried into the step being planned (empty between steps).
  std::unique_ptr<internal::RowSet> in_step_;
  // The step being planned (its memory reused by the next).
  std::unique_ptr<Pool> pool_;
  StepStats stats_;
};

}  // namespace mmpt::plan
