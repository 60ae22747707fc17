#include "mmpt/plan/planner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "mmpt/core/hash.h"
#include "mmpt/pack/refill.h"
#include "mmpt/plan/cp_stage.h"
#include "mmpt/plan/pack_list_internal.h"
#include "mmpt/plan/planner_state_internal.h"

namespace mmpt::plan {
namespace {

// Without allow_repeat, a step draws the large-item slack only from a corpus of at least this
// many times its pool's samples.
constexpr uint64_t kLargePoolCorpusFactor = 4;

// Tokens a step draws into its pool: its packs' capacity and the slack beyond it.
double PoolTarget(const PlannerConfig& config) {
  return static_cast<double>(config.layout.packs_per_step()) * config.layout.seq_len *
         (1.0 + config.pool_slack);
}

// Without allow_repeat a step fills its packs from distinct samples: at least one sample per
// pack, and no source asked by the blend for more samples a step than it has (its share of the
// draws a step takes, at the blend's mean tokens per draw; with one source: the corpus holds a
// step's tokens).
// The placeable counts are a source's first rows' (internal::PlaceableCounter), so a corpus of
// any size is checked in the time of a step.
Status CheckCorpusFillsAStep(const cost::SampleTable& table, const PlannerConfig& config,
                             const SampleOrder& order,
                             const internal::PlaceableCounter& placeable) {
  const Layout& l = config.layout;
  const uint64_t samples = placeable.counted_samples();
  double tokens_per_draw = 0;
  uint32_t sources_with_tokens = 0;
  for (uint32_t s = 0; s < table.num_sources(); ++s) {
    if (order.Share(s) > 0) tokens_per_draw += order.Share(s) * placeable.TokensPerDraw(s);
    sources_with_tokens += placeable.TokensPerDraw(s) > 0;
  }
  if (samples < l.packs_per_step()) {
    return Status::InvalidArgument(
        "step needs {} packs (dp {} × ga {} × mbs {}) but the corpus has {} samples that fit "
        "seq_len {}, and a step holds each sample once; lower --dp/--ga/--mbs or pass "
        "--allow-repeat (Python: allow_repeat=True)",
        l.packs_per_step(), l.dp, l.ga, l.mbs, samples, l.seq_len);
  }
  const double draws = PoolTarget(config) / tokens_per_draw;
  const bool blended = sources_with_tokens > 1;
  for (uint32_t s = 0; s < table.num_sources(); ++s) {
    const double of_source = draws * order.Share(s);
    if (of_source <= static_cast<double>(table.source_size(s))) continue;
    if (!blended) {
      return Status::InvalidArgument(
          "a step of {} packs of {} tokens takes about {:.1f} samples but the corpus has {}, "
          "and a step holds each sample once; lower --dp/--ga/--mbs or pass --allow-repeat "
          "(Python: allow_repeat=True)",
          l.packs_per_step(), l.seq_len, draws, table.source_size(s));
    }
    return Status::InvalidArgument(
        "a step of {} packs of {} tokens takes about {:.1f} samples, {:.1f} of them from source "
        "'{}' by its weight, but the source has {}, and a step holds each sample once; lower "
        "--dp/--ga/--mbs or the source's weight, or pass --allow-repeat (Python: "
        "allow_repeat=True)",
        l.packs_per_step(), l.seq_len, draws, of_source, table.source_names[s],
        table.source_size(s));
  }
  return Status::OK();
}

uint64_t RowOf(uint64_t row) { return row; }
uint64_t RowOf(const PlacedSample& sample) { return sample.row; }

// Carried samples (a sample or its row, with the steps it waited) in the order a planner keeps
// them and a restored one rebuilds: rows ascending, the older first of two copies of a row.
template <typename Sample>
void SortCarried(std::vector<std::pair<Sample, uint8_t>>* carried) {
  std::sort(carried->begin(), carried->end(), [](const auto& a, const auto& b) {
    const uint64_t row_a = RowOf(a.first), row_b = RowOf(b.first);
    return row_a != row_b ? row_a < row_b : a.second > b.second;
  });
}

// Halve the fullest pack of two or more items (the first of equals) until there are `count`
// packs: any part of a pack fits where the whole did. There must be `count` items at least.
void HalveUntil(std::span<const pack::PackItem> items, size_t count,
                std::vector<std::vector<uint32_t>>* packs) {
  std::vector<uint64_t> tokens;
  for (const auto& pack : *packs) {
    tokens.push_back(0);
    for (uint32_t i : pack) tokens.back() += items[i].tokens;
  }
  while (packs->size() < count) {
    size_t fullest = packs->size();
    for (size_t p = 0; p < packs->size(); ++p) {
      if ((*packs)[p].size() >= 2 && (fullest == packs->size() || tokens[p] > tokens[fullest])) {
        fullest = p;
      }
    }
    MMPT_CHECK(fullest < packs->size());
    std::vector<uint32_t> keep, half;
    uint64_t half_tokens = 0;
    for (size_t k = 0; k < (*packs)[fullest].size(); ++k) {
      const uint32_t i = (*packs)[fullest][k];
      (k % 2 == 0 ? keep : half).push_back(i);
      if (k % 2 == 1) half_tokens += items[i].tokens;
    }
    (*packs)[fullest] = std::move(keep);
    tokens[fullest] -= half_tokens;
    packs->push_back(std::move(half));
    tokens.push_back(half_tokens);
  }
}

}  // namespace

namespace internal {

// The rows carried into a step's pool, without allow_repeat: an open-addressing set sized to
// them (a fraction of a step), emptied between steps. A new draw repeats a row of the pool when
// the set holds it or the stream drew it this step (SampleOrder::DrawnSince).
class RowSet {
 public:
  // Insert `row`; false when the set holds it already.
  bool Insert(uint64_t row) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    for (size_t i = Slot(row);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i] == row) return false;
      if (slots_[i] == kEmpty) {
        slots_[i] = row;
        ++size_;
        return true;
      }
    }
  }
  bool Contains(uint64_t row) const {
    if (size_ == 0) return false;
    for (size_t i = Slot(row);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i] == row) return true;
      if (slots_[i] == kEmpty) return false;
    }
  }
  void Clear() {
    std::fill(slots_.begin(), slots_.end(), kEmpty);
    size_ = 0;
  }

 private:
  static constexpr uint64_t kEmpty = UINT64_MAX;
  size_t Slot(uint64_t row) const { return Mix64(row) & (slots_.size() - 1); }
  void Grow() {
    std::vector<uint64_t> old = std::move(slots_);
    slots_.assign(std::max<size_t>(1024, 2 * old.size()), kEmpty);
    size_ = 0;
    for (uint64_t row : old) {
      if (row != kEmpty) Insert(row);
    }
  }
  std::vector<uint64_t> slots_;
  size_t size_ = 0;
};

// Memory hints for the draws ahead: a copy of the sample order runs kAhead draws in front of
// the planner's, and each row it meets is asked of memory in two stages (its text tokens and
// image range; then, half the distance later, its images and their positions, whose place the
// range gives), so a draw from a table larger than the caches finds its row there. Hints only:
// the plan is the same without them.
class RowAhead {
 public:
  RowAhead(const cost::SampleTable& table, const SampleOrder& order)
      : table_(&table), ahead_(order) {
    for (size_t k = 0; k < kAhead; ++k) Advance();
  }
  // One draw further.
  void Advance() {
    const SampleOrder::Draw draw = ahead_.Next();
    const uint64_t row = table_->source_begin[draw.source] + draw.index;
    __builtin_prefetch(&table_->text_tokens[row]);
    __builtin_prefetch(&table_->image_begin[row]);
    rows_[next_ % kAhead] = row;
    const uint64_t half = rows_[(next_ + kAhead / 2) % kAhead];
    if (next_ >= kAhead / 2) {
      const uint64_t image = table_->image_begin[half];
      if (image < table_->images.size()) {
        __builtin_prefetch(&table_->images[image]);
        __builtin_prefetch(&table_->image_text_positions[image]);
      }
    }
    ++next_;
  }

 private:
  static constexpr size_t kAhead = 16;
  const cost::SampleTable* table_;
  SampleOrder ahead_;
  uint64_t rows_[kAhead] = {};
  uint64_t next_ = 0;
};

}  // namespace internal

Status PlannerConfig::Validate() const {
  MMPT_RETURN_IF_ERROR(layout.Validate());
  if (!(pool_slack >= 0 && pool_slack <= 1)) {
    return Status::InvalidArgument("pool slack {} must be within [0, 1]", pool_slack);
  }
  if (max_carry_steps == 0 || max_carry_steps > 255) {
    return Status::InvalidArgument("max carry steps {} must be within [1, 255]", max_carry_steps);
  }
  if (vanilla_buffer == 0) return Status::InvalidArgument("vanilla buffer must be at least 1");
  return Status::OK();
}

Planner::Planner(const cost::SampleTable& table, const cost::CostModel& model, PlannerConfig config,
                 SampleOrder order, internal::PlaceableCounter placeable)
    : table_(&table),
      model_(&model),
      config_(std::move(config)),
      padding_(table, model, config_.layout, config_.cp_vision),
      order_(std::move(order)),
      placeable_(std::make_unique<internal::PlaceableCounter>(std::move(placeable))),
      in_step_(std::make_unique<internal::RowSet>()),
      pool_(std::make_unique<Pool>()) {}

Planner::Planner(Planner&&) noexcept = default;
Planner& Planner::operator=(Planner&&) noexcept = default;
Planner::~Planner() = default;

Result<Planner> Planner::Create(const cost::SampleTable& table, const cost::CostModel& model,
                                PlannerConfig config) {
  MMPT_RETURN_IF_ERROR(config.Validate());
  if (!config.source_weights.empty() && config.source_weights.size() != table.num_sources()) {
    return Status::InvalidArgument("{} source weights for {} sources", config.source_weights.size(),
                                   table.num_sources());
  }
  std::vector<uint64_t> sizes(table.num_sources());
  for (size_t s = 0; s < sizes.size(); ++s) sizes[s] = table.source_size(s);
  MMPT_ASSIGN_OR_RETURN(SampleOrder order,
                        SampleOrder::Create(sizes, config.source_weights, config.seed));
  internal::PlaceableCounter placeable(table, model, config);
  MMPT_RETURN_IF_ERROR(placeable.Start(order, config.layout.packs_per_step()));
  if (!config.allow_repeat) {
    MMPT_RETURN_IF_ERROR(CheckCorpusFillsAStep(table, config, order, placeable));
  }
  return Planner(table, model, std::move(config), std::move(order), std::move(placeable));
}

// The step being planned: its pool (the samples drawn, those deferred and dropped), their media
// items and the step's packs. Kept between steps for their memory only (each step clears them):
// at the seed's step they are hundreds of MB, and memory reused is not faulted in again.
struct Planner::Pool {
  std::vector<PlacedSample> samples;  // the carried-in samples first, then the new draws
  std::vector<uint8_t> age;           // steps each carried-in sample has waited
  size_t num_carried_in = 0;
  bool any_old = false;  // some carried-in sample reached max_carry_steps
  std::vector<std::pair<PlacedSample, uint8_t>> deferred;  // with the steps each waited
  std::vector<uint64_t> dropped_rows;
  internal::PoolMedia media;          // the items of `samples` (PlacedSample::media)
  std::vector<pack::PackItem> items;  // per sample: what the packer sees
  internal::PackList packs;           // the step's packs (PackPool)
  // PackPool's: each kept pack's samples (by pool index), and the samples left out.
  std::vector<std::vector<uint32_t>> step_packs;
  std::vector<uint32_t> spare;
  // The carry the step starts from (Planner::carry_'s, swapped in).
  std::vector<PlacedSample> carried_in;
  std::vector<uint8_t> carried_age;

  void Clear() {
    carried_in.clear();
    carried_age.clear();
    samples.clear();
    age.clear();
    num_carried_in = 0;
    any_old = false;
    deferred.clear();
    dropped_rows.clear();
    media.Clear();
    items.clear();
    packs.samples.clear();
    packs.begin.assign(1, 0);
  }
};

Status Planner::DrawPool() {
  const uint32_t seq_len = config_.layout.seq_len;
  const uint64_t num_packs = config_.layout.packs_per_step();
  const double target_tokens = PoolTarget(config_);
  // The pool: last step's carry, then new samples until the step's capacity is covered.
  // Without allow_repeat a sample the pool already holds is deferred (to `deferred`, carried
  // into the next step).
  Pool& out = *pool_;
  out.Clear();
  std::swap(out.carried_in, carry_);
  std::swap(out.carried_age, carry_age_);
  const std::vector<PlacedSample>& carried_in = out.carried_in;
  const std::vector<uint8_t>& carried_age = out.carried_age;
  std::vector<PlacedSample>& pool = out.samples;
  std::vector<uint8_t>& age = out.age;
  auto& deferred = out.deferred;
  std::vector<uint64_t>& dropped_rows = out.dropped_rows;
  std::vector<uint64_t> pooled(config_.allow_repeat ? 0 : table_->num_sources(), 0);
  double pool_tokens = 0;
  internal::PoolMedia& media = out.media;
  // Where the stream stood: a draw repeats a sample of the pool when it was carried in or drawn
  // since (SampleOrder::DrawnSince).
  const std::vector<SourceCursor> since = order_.cursors();
  // Whether `sample`, the last whose items `media` took, joins the pool (false: the pool holds
  // it, so it is deferred and its items are taken back); `draw` when the stream drew it, null
  // when it was carried in.
  auto join = [&](const PlacedSample& sample, const SampleOrder::Draw* draw, uint8_t waited) {
    if (!config_.allow_repeat) {
      const bool held = draw == nullptr
                            ? !in_step_->Insert(sample.row)
                            : in_step_->Contains(sample.row) || order_.DrawnSince(since, *draw);
      if (held) {
        deferred.emplace_back(sample, waited);
        media.PopBack();
        return false;
      }
      ++pooled[sample.source];
    }
    pool.push_back(sample);
    pool.back().cp_padding = padding_.Of(sample, media);
    pool_tokens += sample.tokens + pool.back().cp_padding;
    return true;
  };
  for (size_t i = 0; i < carried_in.size(); ++i) {
    // Fitted again: a state restored under another seq_len or policy carries samples fitted
    // under the one it was saved under (the same fit otherwise).
    const uint64_t row = carried_in[i].row;
    MMPT_ASSIGN_OR_RETURN(
        internal::FittedRow fitted,
        internal::FitRow(*table_, *model_, config_, carried_in[i].source, row, &media));
    if (fitted.fit.dropped) {
      dropped_rows.push_back(row);
      continue;
    }
    if (join(fitted.sample, nullptr, carried_age[i])) {
      age.push_back(carried_age[i]);
    }
  }
  out.num_carried_in = pool.size();
  for (uint8_t a : age) out.any_old |= a >= config_.max_carry_steps;
  // Set at a draw of a source whose every sample the pool holds: Create checked that the blend
  // asks no source for more samples a step than it has, on average, but near that limit a
  // step can still meet one. The step then ends short of its tokens once it has a sample per
  // pack (it has, at the latest, when the pool holds the whole corpus), rather than the
  // stream running ahead of what steps can hold.
  bool exhausted = false;
  internal::RowAhead ahead(*table_, order_);
  auto draw_until = [&](double target) -> Status {
    while (pool_tokens < target && !(exhausted && pool.size() >= num_packs)) {
      ahead.Advance();
      const SampleOrder::Draw draw = order_.Next();
      MMPT_ASSIGN_OR_RETURN(
          const std::optional<PlacedSample> drawn,
          internal::FitDraw(draw, *table_, *model_, config_, &stats_, &dropped_rows, &media));
      if (!drawn) continue;
      if (!config_.allow_repeat && !exhausted) {
        MMPT_ASSIGN_OR_RETURN(exhausted,
                              placeable_->AllPooled(drawn->source, pooled[drawn->source]));
      }
      join(*drawn, &draw, 0);
    }
    return Status::OK();
  };
  MMPT_RETURN_IF_ERROR(draw_until(target_tokens));
  // Items each a large share of a pack (photo posts) fill packs only in certain combinations:
  // a larger pool gives the packer that choice, and what it leaves carries over
  // (docs/benchmarks.md). Each sample once a step: only where the corpus holds several pools,
  // else the draws the pool already holds would be deferred faster than steps place them.
  if (config_.pool_slack < kLargeItemPoolSlack && !exhausted &&
      (config_.allow_repeat || kLargePoolCorpusFactor * pool.size() <= table_->num_samples())) {
    std::vector<uint32_t> pool_tokens_each(pool.size());
    for (size_t i = 0; i < pool.size(); ++i) pool_tokens_each[i] = pool[i].tokens;
    if (pack::LargeItems(std::move(pool_tokens_each), seq_len)) {
      MMPT_RETURN_IF_ERROR(
          draw_until(static_cast<double>(num_packs) * seq_len * (1.0 + kLargeItemPoolSlack)));
    }
  }
  // The carried rows are needed only while drawing: clear them for the next step.
  if (!config_.allow_repeat) in_step_->Clear();
  stats_.dropped = dropped_rows.size();
  stats_.deferred = deferred.size();
  stats_.source_exhausted = exhausted;
  return Status::OK();
}

Status Planner::PackPool() {
  Pool& drawn = *pool_;
  const uint32_t seq_len = config_.layout.seq_len;
  const uint64_t num_packs = config_.layout.packs_per_step();
  const std::vector<PlacedSample>& pool = drawn.samples;
  const std::vector<uint8_t>& age = drawn.age;
  const size_t num_carried_in = drawn.num_carried_in;
  const bool any_old = drawn.any_old;
  // Pack the pool; keep the step's packs: those holding a long-carried sample, then the
  // fullest; everything else carries over.
  std::vector<pack::PackItem>& items = drawn.items;
  items.resize(pool.size());
  for (size_t i = 0; i < pool.size(); ++i) {
    items[i] = {pool[i].tokens + pool[i].cp_padding, pool[i].images};
  }
  pack::PackConstraints constraints{seq_len, config_.max_samples_per_pack,
                                    config_.max_images_per_pack};
  MMPT_ASSIGN_OR_RETURN(pack::Packing packing,
                        pack::PackItems(items, constraints, config_.algorithm));
  stats_.candidate_packs = packing.num_packs();
  std::vector<uint8_t> has_old(packing.num_packs(), 0);
  if (any_old) {
    for (size_t p = 0; p < packing.num_packs(); ++p) {
      for (uint32_t i : packing.Pack(p)) {
        has_old[p] |= i < num_carried_in && age[i] >= config_.max_carry_steps;
      }
    }
  }
  std::vector<uint32_t> ranked(packing.num_packs());
  std::iota(ranked.begin(), ranked.end(), 0);
  std::stable_sort(ranked.begin(), ranked.end(), [&](uint32_t a, uint32_t b) {
    if (has_old[a] != has_old[b]) return has_old[a] > has_old[b];
    return packing.pack_tokens[a] > packing.pack_tokens[b];
  });
  // The step's packs, then tightened with the items left out (they would carry over anyway).
  // A pool cut short by an exhausted source may pack into fewer packs than the step has: all
  // are kept and halved until every pack has a sample.
  const uint64_t kept = std::min<uint64_t>(num_packs, packing.num_packs());
  std::vector<uint8_t> chosen(packing.num_packs(), 0);
  std::vector<std::vector<uint32_t>>& step_packs = drawn.step_packs;
  step_packs.resize(kept);
  for (uint64_t k = 0; k < kept; ++k) {
    chosen[ranked[k]] = 1;
    auto pack = packing.Pack(ranked[k]);
    step_packs[k].assign(pack.begin(), pack.end());
  }
  if (kept < num_packs) HalveUntil(items, num_packs, &step_packs);
  std::vector<uint32_t>& spare = drawn.spare;
  spare.clear();
  for (size_t p = 0; p < packing.num_packs(); ++p) {
    if (chosen[p]) continue;
    for (uint32_t i : packing.Pack(p)) spare.push_back(i);
  }
  std::vector<uint8_t> locked;
  if (any_old) {
    locked.assign(pool.size(), 0);
    for (size_t i = 0; i < num_carried_in; ++i) locked[i] = age[i] >= config_.max_carry_steps;
  }
  pack::RefillFromSpare(items, constraints, locked, &step_packs, &spare);
  internal::PackList& packs = drawn.packs;
  for (const auto& pack : step_packs) {
    for (uint32_t i : pack) {
      packs.samples.push_back(pool[i]);
      stats_.tokens += pool[i].tokens;
    }
    packs.Close();
  }
  // Carried: the spare and the deferred draws, in row order, the older first of two copies of
  // a row: the order a restored planner rebuilds. The older copy joins the next pool (the other
  // waits again), so it ages into a kept pack (max_carry_steps) even while the stream keeps
  // drawing younger copies.
  std::vector<std::pair<PlacedSample, uint8_t>> carried = std::move(drawn.deferred);
  for (uint32_t i : spare) carried.emplace_back(pool[i], i < num_carried_in ? age[i] : 0);
  for (auto& [sample, waited] : carried) {
    waited = static_cast<uint8_t>(std::min<uint32_t>(waited + 1u, 255u));
    stats_.max_carry_age = std::max<uint32_t>(stats_.max_carry_age, waited);
  }
  SortCarried(&carried);
  for (const auto& [sample, waited] : carried) {
    carry_.push_back(sample);
    carry_age_.push_back(waited);
  }
  return Status::OK();
}

Result<StepPlan> Planner::PlanStep(StepPlan recycled) {
  const auto start = std::chrono::steady_clock::now();
  stats_ = StepStats{};
  // Add the time since the last lap to `phase`.
  auto lap = [last = start](double& phase) mutable {
    const auto now = std::chrono::steady_clock::now();
    phase += std::chrono::duration<double>(now - last).count();
    last = now;
  };
  const Layout& layout = config_.layout;
  const uint32_t seq_len = layout.seq_len;
  const uint64_t num_packs = layout.packs_per_step();
  StepStats::Phases phases;
  MMPT_RETURN_IF_ERROR(DrawPool());
  lap(phases.draw);
  MMPT_RETURN_IF_ERROR(PackPool());
  const Pool& pool = *pool_;
  const internal::PackList& packs = pool.packs;

  // Balance the packs over (rank, micro-step) and assemble the plan. plan ▸ cp: every pack is
  // split over its CP group (padded as TE and sequence parallelism need), and its images
  // assigned to the CP ranks that encode them; under CP that comes first, and the balancer
  // evens out what each pack's CP group pays: its most-loaded rank (CpPackCosts).
  const std::vector<balance::PackCost> pack_costs = internal::CostPacks(packs, *model_, seq_len);
  lap(phases.pack);
  std::vector<balance::PackCost> balanced = pack_costs;
  std::vector<PackCp> pack_cp;
  if (layout.cp > 1) {
    std::vector<uint32_t> in_order(num_packs);
    std::iota(in_order.begin(), in_order.end(), 0);
    StepPlan packed = internal::Assemble(step_, layout, packs, in_order, pack_costs, *table_,
                                         pool.media, pool.dropped_rows, {});
    lap(phases.assemble);
    MMPT_RETURN_IF_ERROR(AddCpStage(packed, config_.cp_vision));
    balanced = CpPackCosts(packed, model_->AttentionPairWeight());
    pack_cp = std::move(packed.cp);
    lap(phases.cp);
  }
  const balance::Grid grid = layout.BalanceGrid();
  MMPT_ASSIGN_OR_RETURN(balance::Assignment assignment, balance::Balance(balanced, grid));
  lap(phases.balance);
  StepPlan plan = internal::Assemble(step_, layout, packs, assignment, pack_costs, *table_,
                                     pool.media, pool.dropped_rows, std::move(recycled));
  lap(phases.assemble);
  if (layout.cp > 1) {
    plan.cp.resize(num_packs);
    for (size_t slot = 0; slot < num_packs; ++slot) {
      plan.cp[slot] = std::move(pack_cp[assignment[slot]]);  // each pack is in one slot
    }
  } else {
    MMPT_RETURN_IF_ERROR(AddCpStage(plan, config_.cp_vision));
  }
  lap(phases.cp);
  plan.estimate = balance::Evaluate(balanced, assignment, grid);
  lap(phases.balance);

  stats_.packs = num_packs;
  stats_.placed = packs.samples.size();
  stats_.carried = carry_.size();
  stats_.lower_bound_packs = (stats_.tokens + seq_len - 1) / seq_len;
  stats_.efficiency =
      static_cast<double>(stats_.tokens) / (static_cast<double>(num_packs) * seq_len);
  ++step_;
  stats_.plan_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_.phase_seconds = phases;
  return plan;
}

namespace {

// The settings a state is saved under, by name: the corpus's shape, the seed and the blend
// define the sample stream (a restore needs them unchanged); the layout and the packing options
// only how it is planned.
std::vector<internal::Setting> SettingsOf(const PlannerConfig& config,
                                          const cost::SampleTable& table) {
  const Layout& l = config.layout;
  auto list = [](const auto& values) { return fmt::format("{}", fmt::join(values, ",")); };
  auto number = [](auto value) { return fmt::format("{}", value); };
  return {{"dp", number(l.dp)},
          {"tp", number(l.tp)},
          {"pp", number(l.pp)},
          {"cp", number(l.cp)},
          {"ep", number(l.ep)},
          {"ga", number(l.ga)},
          {"mbs", number(l.mbs)},
          {"seq_len", number(l.seq_len)},
          {"sync", std::string(SyncModelName(l.sync))},
          {"overlong", std::string(pack::OverlongPolicyName(config.overlong))},
          {"algorithm", std::string(pack::AlgorithmName(config.algorithm))},
          {"max_samples_per_pack", number(config.max_samples_per_pack)},
          {"max_images_per_pack", number(config.max_images_per_pack)},
          {"max_carry_steps", number(config.max_carry_steps)},
          {"pool_slack", number(config.pool_slack)},
          {"seed", number(config.seed), true},
          {"allow_repeat", config.allow_repeat ? "yes" : "no", true},
          {"source_weights", list(config.source_weights), true},
          {"samples", number(table.num_samples()), true},
          {"images", number(table.num_images()), true},
          {"source_begin", list(table.source_begin), true}};
}

}  // namespace

std::string Planner::SaveState() const {
  internal::SavedState state;
  state.settings = SettingsOf(config_, *table_);
  state.step = step_;
  state.before.cursors = order_.cursors();
  for (const PlacedSample& sample : carry_) state.before.carried_rows.push_back(sample.row);
  state.before.carried_ages = carry_age_;
  return internal::EncodeState(state);
}

Result<std::string> Planner::StateWithinStep(std::string_view before, std::string_view after,
                                             const StepPlan& current, uint32_t micro_step) const {
  MMPT_ASSIGN_OR_RETURN(internal::SavedState state, internal::DecodeState(before));
  MMPT_ASSIGN_OR_RETURN(internal::SavedState next, internal::DecodeState(after));
  if (state.step != current.step || next.step != current.step + 1 || state.micro_step != 0 ||
      next.micro_step != 0) {
    return Status::InvalidArgument(
        "state within step {}: the states given are before steps {} and {} (want {} and {})",
        current.step, state.step, next.step, current.step, current.step + 1);
  }
  const Layout& layout = current.layout;
  if (micro_step == 0 || micro_step >= layout.ga) {
    return Status::InvalidArgument("state within step {}: micro-step {} is not within [1, {})",
                                   current.step, micro_step, layout.ga);
  }
  auto values = [](const std::vector<internal::Setting>& settings) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const internal::Setting& s : settings) out.emplace_back(s.name, s.value);
    return out;
  };
  const auto mine = values(SettingsOf(config_, *table_));
  if (values(state.settings) != mine || values(next.settings) != mine) {
    return Status::InvalidArgument("state within step {}: states of another planner", current.step);
  }
  // The step's samples no rank has consumed: those of micro-steps micro_step.. of every rank.
  // They join the samples carried past the step, as ones that waited their limit (they were
  // due this step), so they are placed first.
  std::vector<std::pair<uint64_t, uint8_t>> carried;
  for (size_t i = 0; i < next.before.carried_rows.size(); ++i) {
    carried.emplace_back(next.before.carried_rows[i], next.before.carried_ages[i]);
  }
  for (uint32_t rank = 0; rank < layout.dp; ++rank) {
    for (uint32_t micro = micro_step; micro < layout.ga; ++micro) {
      for (uint32_t slot = 0; slot < layout.mbs; ++slot) {
        for (const PlannedSequence& seq : current.Sequences(current.Pack(rank, micro, slot))) {
          carried.emplace_back(table_->source_begin[seq.source] + seq.index,
                               static_cast<uint8_t>(config_.max_carry_steps));
        }
      }
    }
  }
  SortCarried(&carried);
  internal::StreamPoint rest{std::move(next.before.cursors), {}, {}};
  for (const auto& [row, age] : carried) {
    rest.carried_rows.push_back(row);
    rest.carried_ages.push_back(age);
  }
  state.micro_step = micro_step;
  state.rest = std::move(rest);
  return internal::EncodeState(state);
}

Result<Planner::ResumePoint> Planner::RestoreState(std::string_view bytes) {
  MMPT_ASSIGN_OR_RETURN(internal::SavedState saved, internal::DecodeState(bytes));
  // The settings the state was saved under, each compared with this planner's by name.
  std::map<std::string, std::string> then;
  for (const internal::Setting& s : saved.settings) then[s.name] = s.value;
  std::vector<std::string> stream_differs;
  ResumePoint resume;
  for (const internal::Setting& s : SettingsOf(config_, *table_)) {
    auto it = then.find(s.name);
    const std::string was = it == then.end() ? "(not recorded)" : it->second;
    if (was == s.value) continue;
    if (s.stream) {
      stream_differs.push_back(
          fmt::format("saved at {} {}, now {} {}", s.name, was, s.name, s.value));
    } else {
      resume.changed.push_back(fmt::format("{} {} → {}", s.name, was, s.value));
    }
  }
  if (!stream_differs.empty()) {
    return Status::InvalidArgument(
        "planner state is of another corpus, seed or blend (a restore may change the layout, "
        "not the sample stream): {}",
        fmt::join(stream_differs, "; "));
  }
  // Exact: the same settings resume at the saved micro-step of the same plan. Elastic: the
  // stream goes on, from the point after the step when the state was saved inside it.
  const bool inside = saved.micro_step > 0 && !resume.changed.empty();
  const internal::StreamPoint& point = inside ? *saved.rest : saved.before;
  resume.step = saved.step + (inside ? 1 : 0);
  resume.micro_step = resume.changed.empty() ? saved.micro_step : 0;
  if (resume.micro_step >= config_.layout.ga) {
    return Status::Corrupt("planner state: micro-step {} of a step of {}", resume.micro_step,
                           config_.layout.ga);
  }
  std::vector<PlacedSample> carry;
  for (uint64_t row : point.carried_rows) {
    if (row >= table_->num_samples()) {
      return Status::Corrupt("planner state: carried row {} is past the corpus ({} samples)", row,
                             table_->num_samples());
    }
    // Fitted under this planner's config; one it drops is listed by the next step (PlanStep
    // fits carried samples again).
    MMPT_ASSIGN_OR_RETURN(
        internal::FittedRow fitted,
        internal::FitRow(*table_, *model_, config_, table_->SourceOfRow(row), row));
    carry.push_back(fitted.sample);
  }
  MMPT_RETURN_IF_ERROR(order_.Restore(point.cursors));
  step_ = resume.step;
  carry_ = std::move(carry);
  carry_age_ = point.carried_ages;
  return resume;
}

}  // namespace mmpt::plan
