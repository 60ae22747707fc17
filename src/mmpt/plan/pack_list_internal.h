#pragma once

// Shared by the mmpt and vanilla planners: packs as lists of placed samples, their costs, and
// the StepPlan built from packs and an assignment.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "mmpt/balance/balancer.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/pack/overlong.h"
#include "mmpt/plan/placed_sample.h"
#include "mmpt/plan/planner.h"
#include "mmpt/plan/sample_order.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::plan::internal {

/// Packs as CSR: pack p holds samples[begin[p] .. begin[p + 1]).
struct PackList {
  std::vector<uint32_t> begin{0};
  std::vector<PlacedSample> samples;

  size_t size() const { return begin.size() - 1; }
  std::span<const PlacedSample> Pack(size_t p) const {
    return std::span<const PlacedSample>(samples).subspan(begin[p], begin[p + 1] - begin[p]);
  }
  void Close() { begin.push_back(static_cast<uint32_t>(samples.size())); }
};

/// The media items of a step's pool, each placed as the plan places it (its token position
/// under the sample's fit) when its sample joins the pool: Assemble copies them into the plan,
/// so a sample is costed once a step. Sample k (PlacedSample::media) holds images
/// [begin[k].image, begin[k + 1].image), and its videos and audio clips alike (the three
/// side by side: one read of memory finds a sample's items).
struct PoolMedia {
  struct Begin {
    uint32_t image = 0, video = 0, audio = 0;
  };
  std::vector<PlannedImage> images;
  std::vector<PlannedVideo> videos;
  std::vector<PlannedAudio> audios;
  std::vector<Begin> begin{Begin{}};

  uint32_t size() const { return static_cast<uint32_t>(begin.size() - 1); }
  std::span<const PlannedImage> Images(uint32_t k) const {
    return std::span<const PlannedImage>(images).subspan(begin[k].image,
                                                         begin[k + 1].image - begin[k].image);
  }
  std::span<const PlannedVideo> Videos(uint32_t k) const {
    return std::span<const PlannedVideo>(videos).subspan(begin[k].video,
                                                         begin[k + 1].video - begin[k].video);
  }
  std::span<const PlannedAudio> Audios(uint32_t k) const {
    return std::span<const PlannedAudio>(audios).subspan(begin[k].audio,
                                                         begin[k + 1].audio - begin[k].audio);
  }
  /// Append a sample's items (`costed`: its items and their costs, cost::CostSample), `text_tokens`
  /// of its text kept, at their token positions: items follow their text positions; at an equal
  /// position images come first, then videos and audio in record order (cost::VideoItem::record:
  /// a video's groups and its sound track's parts), a video first when the records do not say.
  /// The one rule for where a sample's media sit. Returns the sample's index.
  uint32_t Add(const cost::ItemCosts& costed, uint32_t text_tokens);
  /// Remove the last sample's items.
  void PopBack();
  void Clear();

  cost::ItemCosts scratch;  // FitRow's, reused
};

/// Sample `row` (of `source`) costed (cost::CostSample, which checks the row first) and fitted: the
/// over-long policy, and dropped too when it holds more images than a pack may
/// (config.max_images_per_pack). A kept sample's items are added to `media` when given
/// (PlacedSample::media names them).
struct FittedRow {
  pack::Fitted fit;
  PlacedSample sample;  // when kept: its tokens, text tokens and encoder seconds
};
Result<FittedRow> FitRow(const cost::SampleTable& table, const cost::CostModel& model,
                         const PlannerConfig& config, uint32_t source, uint64_t row,
                         PoolMedia* media = nullptr);

/// Fit the stream's sample `draw` (its items to `media`, as FitRow): counts the draw
/// (stats->drawn) and a truncation (stats->truncated); a sample FitRow drops is appended to
/// `dropped_rows` and gives nullopt. Errors: FitRow's (a corrupt row, an item the model cannot
/// cost).
Result<std::optional<PlacedSample>> FitDraw(const SampleOrder::Draw& draw,
                                            const cost::SampleTable& table,
                                            const cost::CostModel& model,
                                            const PlannerConfig& config, StepStats* stats,
                                            std::vector<uint64_t>* dropped_rows, PoolMedia* media);

/// What each source can put in packs (the samples FitRow keeps, and their tokens after it),
/// counted over a prefix of the source's rows only as far as a question needs: a planner's work
/// and memory stay independent of the corpus's size. The counts are a cache of the table under
/// one config, not planner state. The table and model are borrowed.
class PlaceableCounter {
 public:
  PlaceableCounter(const cost::SampleTable& table, const cost::CostModel& model,
                   const PlannerConfig& config);
  /// Check that some sample can be placed and that the stream's sources (`order`) hold at
  /// least `samples` placeable ones between them, and count each drawn source's first rows
  /// (tokens_per_draw). Errors: InvalidArgument when every sample the stream can draw is
  /// dropped; FitRow's.
  Status Start(const SampleOrder& order, uint64_t samples);
  /// Placeable samples among the stream's sources, counted so far (at least Start's `samples`
  /// when the corpus has them).
  uint64_t counted_samples() const;
  /// Mean tokens per draw of source `s` (dropped draws count 0) over its rows counted so far.
  double TokensPerDraw(uint32_t s) const;
  /// Whether the `pooled` distinct placeable samples of source `s` a step holds are all it has:
  /// counts further rows only while they might be.
  Result<bool> AllPooled(uint32_t s, uint64_t pooled) {
    const Source& src = sources_[s];
    if (pooled < src.samples) return false;
    return AllPooledSlow(s, pooled);
  }

 private:
  struct Source {
    uint64_t counted = 0;  // rows counted from the source's first
    uint64_t samples = 0;  // placeable among them
    uint64_t tokens = 0;   // their tokens after FitRow
  };
  Result<bool> AllPooledSlow(uint32_t s, uint64_t pooled);
  // Count rows of source `s` until `rows` are counted (or the source ends).
  Status CountTo(uint32_t s, uint64_t rows);

  const cost::SampleTable* table_;
  const cost::CostModel* model_;
  PlannerConfig config_;
  std::vector<Source> sources_;
};

/// The cost vector of every pack: per encoder, Σ its samples' seconds (vision: images and
/// videos; audio); LLM: Σ per-sub-sequence seconds (linear + causal attention) plus the padding
/// up to seq_len.
std::vector<balance::PackCost> CostPacks(const PackList& packs, const cost::CostModel& model,
                                         uint32_t seq_len);

/// Build the StepPlan: slot s = (rank × ga + micro) × mbs + k holds packs[assignment[s]], each
/// sample's items copied from `media`; `dropped_rows` are the table rows the step drew and
/// dropped, in draw order. The plan reuses `recycled`'s memory (Planner::PlanStep); its cp
/// entries stay for the cp stage to overwrite, every one of them.
StepPlan Assemble(uint64_t step, const Layout& layout, const PackList& packs,
                  std::span<const uint32_t> assignment, std::span<const balance::PackCost> costs,
                  const cost::SampleTable& table, const PoolMedia& media,
                  std::span<const uint64_t> dropped_rows, StepPlan recycled);

}  // namespace mmpt::plan::internal
