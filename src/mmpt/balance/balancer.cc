#include "mmpt/balance/balancer.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>
#include <tuple>

namespace mmpt::balance {
namespace {

double Total(const PackCost& c) { return c.Total(); }

// One dimension of the cost vector: an encoder index, or kLlm.
constexpr size_t kLlm = kNumEncoders;
double Dim(const PackCost& c, size_t dim) { return dim == kLlm ? c.llm : c.encoder[dim]; }

// Longest processing time first with a cardinality limit: items (by index, heaviest first)
// go to the least-loaded bin that still has room; ties go to the lower bin. Returns the bin
// of every item.
std::vector<uint32_t> LptWithCapacity(std::span<const double> weights, uint32_t bins,
                                      uint32_t capacity) {
  std::vector<uint32_t> order(weights.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return weights[a] > weights[b]; });
  using Entry = std::pair<double, uint32_t>;  // (load, bin): min-heap, ties by bin
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  for (uint32_t b = 0; b < bins; ++b) heap.emplace(0.0, b);
  std::vector<uint32_t> count(bins, 0), bin_of(weights.size());
  for (uint32_t i : order) {
    auto [load, b] = heap.top();
    heap.pop();
    bin_of[i] = b;
    if (++count[b] < capacity) heap.emplace(load + weights[i], b);
  }
  return bin_of;
}

// Spread `members` (pack indices) over `ranks` ranks × mbs slots so each rank's sum is even:
// heaviest first, snake order. Writes the rank-major slot order into `out`.
void DealToRanks(std::span<const PackCost> packs, std::span<uint32_t> members, uint32_t ranks,
                 uint32_t mbs, std::vector<uint32_t>* out) {
  std::stable_sort(members.begin(), members.end(),
                   [&](uint32_t a, uint32_t b) { return Total(packs[a]) > Total(packs[b]); });
  out->assign(members.size(), 0);
  for (size_t i = 0; i < members.size(); ++i) {
    size_t round = i / ranks, pos = i % ranks;
    size_t rank = (round % 2 == 0) ? pos : ranks - 1 - pos;
    (*out)[rank * mbs + round] = members[i];
  }
}

// Cost of one sync group's micro-step: Σ over encoders of the max + max LLM over its ranks'
// slot sums.
double CellCost(std::span<const PackCost> packs, std::span<const uint32_t> slots, uint32_t mbs) {
  PackCost max;
  for (size_t r = 0; r * mbs < slots.size(); ++r) {
    PackCost sum;
    for (uint32_t k = 0; k < mbs; ++k) {
      const PackCost& c = packs[slots[r * mbs + k]];
      for (size_t e = 0; e < kNumEncoders; ++e) sum.encoder[e] += c.encoder[e];
      sum.llm += c.llm;
    }
    for (size_t e = 0; e < kNumEncoders; ++e)
      max.encoder[e] = std::max(max.encoder[e], sum.encoder[e]);
    max.llm = std::max(max.llm, sum.llm);
  }
  return max.Total();
}

Assignment BalanceStep(std::span<const PackCost> packs, const Grid& grid) {
  std::vector<double> weights(packs.size());
  for (size_t i = 0; i < packs.size(); ++i) weights[i] = Total(packs[i]);
  const uint32_t per_rank = grid.ga * grid.mbs;
  std::vector<uint32_t> rank_of = LptWithCapacity(weights, grid.dp, per_rank);
  std::vector<std::vector<uint32_t>> rank_packs(grid.dp);
  for (uint32_t i = 0; i < packs.size(); ++i) rank_packs[rank_of[i]].push_back(i);
  Assignment assignment(packs.size());
  for (uint32_t r = 0; r < grid.dp; ++r) {
    auto& mine = rank_packs[r];
    if (grid.sync == SyncModel::kPipeline) {
      // Light micro-steps at both ends: ascending costs placed front, back, front, back, ...
      std::stable_sort(mine.begin(), mine.end(),
                       [&](uint32_t a, uint32_t b) { return weights[a] < weights[b]; });
      std::vector<uint32_t> placed(mine.size());
      size_t front = 0, back = mine.size();
      for (size_t i = 0; i < mine.size(); ++i) {
        if (i % 2 == 0) {
          placed[front++] = mine[i];
        } else {
          placed[--back] = mine[i];
        }
      }
      mine = std::move(placed);
    }
    std::copy(mine.begin(), mine.end(), assignment.begin() + size_t{r} * per_rank);
  }
  return assignment;
}

// Nested bands: `order` (the packs sorted by dims[0], heaviest first) cut into bands[0] runs
// of whole cells, each run sorted by dims[1] and cut into bands[1] runs, ..., the last runs
// sorted by the last dimension. Returns the packs, cell after cell. `by_next`: the positions in
// `order` sorted by dims[1], heaviest first, equal ones by position: the first level's runs,
// each sorted stably, are its positions dealt to their runs in that order (no sort per
// candidate).
std::vector<uint32_t> BandCells(std::span<const PackCost> packs, std::span<const uint32_t> order,
                                std::span<const uint32_t> by_next, size_t cell_size,
                                std::span<const size_t> dims, std::span<const size_t> bands) {
  const size_t cells = packs.size() / cell_size;
  std::vector<uint32_t> out(order.size());
  // Runs as [first cell, end cell).
  std::vector<std::pair<size_t, size_t>> runs;
  {
    const size_t b = std::min(bands[0], cells);
    std::vector<uint32_t> run_of_cell(cells);
    std::vector<size_t> next(b);  // where each run's next pack goes
    for (size_t j = 0; j < b; ++j) {
      const size_t run_first = cells * j / b, run_end = cells * (j + 1) / b;
      for (size_t c = run_first; c < run_end; ++c) run_of_cell[c] = static_cast<uint32_t>(j);
      next[j] = run_first * cell_size;
      runs.emplace_back(run_first, run_end);
    }
    for (uint32_t position : by_next) {
      const size_t cell = position / cell_size;
      if (cell < cells) {
        out[next[run_of_cell[cell]]++] = order[position];
      } else {
        out[position] = order[position];  // past the whole cells: left in place
      }
    }
  }
  for (size_t level = 1; level < bands.size(); ++level) {
    std::vector<std::pair<size_t, size_t>> next;
    for (auto [first, end] : runs) {
      const size_t run_cells = end - first, b = std::min(bands[level], run_cells);
      for (size_t j = 0; j < b; ++j) {
        const size_t run_first = first + run_cells * j / b,
                     run_end = first + run_cells * (j + 1) / b;
        const size_t dim = dims[level + 1];
        std::stable_sort(
            out.begin() + static_cast<ptrdiff_t>(run_first * cell_size),
            out.begin() + static_cast<ptrdiff_t>(run_end * cell_size),
            [&](uint32_t x, uint32_t y) { return Dim(packs[x], dim) > Dim(packs[y], dim); });
        next.emplace_back(run_first, run_end);
      }
    }
    runs = std::move(next);
  }
  return out;
}

// One candidate's cells, dealt to ranks: the slot order and every cell's cost.
struct Cells {
  std::vector<uint32_t> slots;
  std::vector<double> costs;
  double total = 0;
};

Cells DealCells(std::span<const PackCost> packs, const std::vector<uint32_t>& order,
                const Grid& grid) {
  const size_t cell_size = size_t{grid.group} * grid.mbs;
  const size_t cells = packs.size() / cell_size;
  Cells out;
  out.slots.resize(packs.size());
  out.costs.resize(cells);
  std::vector<uint32_t> members, dealt;
  for (size_t c = 0; c < cells; ++c) {
    members.assign(order.begin() + static_cast<ptrdiff_t>(c * cell_size),
                   order.begin() + static_cast<ptrdiff_t>((c + 1) * cell_size));
    DealToRanks(packs, members, grid.group, grid.mbs, &dealt);
    std::copy(dealt.begin(), dealt.end(),
              out.slots.begin() + static_cast<ptrdiff_t>(c * cell_size));
    out.costs[c] = CellCost(packs, dealt, grid.mbs);
    out.total += out.costs[c];
  }
  return out;
}

// The candidates local search starts from (ImproveCells): the best few of the bands.
constexpr size_t kSearchStarts = 3;

// Try every band count (1, 2, 4, ..., cells) at every level of `dims` but the last; keep in
// `best` the kSearchStarts candidates with the least Σ cell cost, least first (the first of
// equals).
void SearchBands(std::span<const PackCost> packs, const Grid& grid, std::span<const size_t> dims,
                 std::vector<Cells>* best) {
  const size_t cell_size = size_t{grid.group} * grid.mbs;
  const size_t cells = packs.size() / cell_size;
  std::vector<uint32_t> order(packs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    for (size_t dim : dims) {
      if (Dim(packs[a], dim) != Dim(packs[b], dim)) return Dim(packs[a], dim) > Dim(packs[b], dim);
    }
    return false;
  });
  std::vector<uint32_t> by_next(packs.size());
  std::iota(by_next.begin(), by_next.end(), 0);
  std::stable_sort(by_next.begin(), by_next.end(), [&](uint32_t a, uint32_t b) {
    return Dim(packs[order[a]], dims[1]) > Dim(packs[order[b]], dims[1]);
  });
  std::vector<size_t> bands(dims.size() - 1, 1);
  while (true) {
    Cells candidate =
        DealCells(packs, BandCells(packs, order, by_next, cell_size, dims, bands), grid);
    auto at = std::upper_bound(best->begin(), best->end(), candidate.total,
                               [](double total, const Cells& c) { return total < c.total; });
    if (at - best->begin() < static_cast<ptrdiff_t>(kSearchStarts)) {
      best->insert(at, std::move(candidate));
      if (best->size() > kSearchStarts) best->pop_back();
    }
    // Next band counts, the last level fastest (an odometer of powers of 2); a level stops at
    // the cells of the runs above it, past which its bands would repeat a candidate.
    auto limit = [&](size_t level) {
      size_t runs = 1;
      for (size_t k = 0; k < level; ++k) runs *= bands[k];
      return std::max<size_t>(1, (cells + runs - 1) / runs);
    };
    size_t level = bands.size();
    while (level > 0 && bands[level - 1] >= limit(level - 1)) bands[--level] = 1;
    if (level == 0) break;
    bands[level - 1] = std::min(bands[level - 1] * 2, limit(level - 1));
  }
}

// Cells within this distance (in band order, where neighbours are alike) trade packs in
// ImproveCells; and at most this many passes over all cells.
constexpr size_t kSwapWindow = 8;
constexpr int kSwapPasses = 8;
// A pass that gains less than this share of the cells' cost is the last.
constexpr double kSwapMinGain = 1e-4;

// Swaps of packs between the cells of a candidate (ImproveCells). With one pack per rank a cell
// costs Σ over dimensions of its heaviest member: kept per cell and dimension with the
// runner-up, a swap is priced in O(dimensions). With several, the cell is dealt to its ranks
// again (DealToRanks).
class CellSwaps {
 public:
  // Cell `cell`'s member `member` and pack `with` of cell `other` (at `other_member`) trade
  // places, changing the cells' summed cost by `delta`.
  struct Swap {
    size_t cell = 0, member = 0, other = 0, other_member = 0;
    double delta = 0;
  };

  CellSwaps(std::span<const PackCost> packs, const Grid& grid, Cells* cells)
      : packs_(packs), grid_(grid), cells_(cells), cell_size_(size_t{grid.group} * grid.mbs) {
    if (grid.mbs == 1) {
      top_.resize(cells->costs.size() * kDims);
      for (size_t c = 0; c < cells->costs.size(); ++c) Refresh(c);
    }
  }

  // The swap of cell `c`'s heaviest pack in `dim` with a lighter pack of a cell within
  // kSwapWindow that lowers the two cells' cost the most; nullopt when none does.
  std::optional<Swap> Best(size_t c, size_t dim) {
    auto mine = Members(c);
    const size_t k = static_cast<size_t>(
        std::max_element(mine.begin(), mine.end(),
                         [&](uint32_t x, uint32_t y) { return Value(x, dim) < Value(y, dim); }) -
        mine.begin());
    const uint32_t a = mine[k];
    std::optional<Swap> best;
    double best_delta = -1e-12 * (cells_->costs[c] + 1e-300);
    const size_t count = cells_->costs.size();
    const size_t first = c > kSwapWindow ? c - kSwapWindow : 0;
    for (size_t d = first; d < std::min(count, c + kSwapWindow + 1); ++d) {
      if (d == c) continue;
      auto theirs = Members(d);
      for (size_t j = 0; j < theirs.size(); ++j) {
        if (Value(theirs[j], dim) >= Value(a, dim)) continue;
        const double delta = CostWith(c, k, theirs[j], nullptr) + CostWith(d, j, a, nullptr) -
                             cells_->costs[c] - cells_->costs[d];
        if (delta < best_delta) {
          best_delta = delta;
          best = Swap{c, k, d, j, delta};
        }
      }
    }
    return best;
  }

  void Apply(const Swap& swap) {
    const uint32_t a = Members(swap.cell)[swap.member];
    const uint32_t b = Members(swap.other)[swap.other_member];
    std::vector<uint32_t> slots;
    for (auto [cell, member, pack] :
         {std::tuple{swap.cell, swap.member, b}, std::tuple{swap.other, swap.other_member, a}}) {
      cells_->costs[cell] = CostWith(cell, member, pack, &slots);
      std::copy(slots.begin(), slots.end(), Members(cell).begin());
    }
    if (grid_.mbs == 1) {
      Refresh(swap.cell);
      Refresh(swap.other);
    }
    cells_->total += swap.delta;
  }

 private:
  static constexpr size_t kDims = kLlm + 1;
  struct Top2 {
    double first = 0, second = 0;
    size_t at = 0;  // member holding `first`
  };

  double Value(uint32_t pack, size_t dim) const { return Dim(packs_[pack], dim); }
  std::span<uint32_t> Members(size_t c) const {
    return std::span<uint32_t>(cells_->slots).subspan(c * cell_size_, cell_size_);
  }
  void Refresh(size_t c) {
    auto mine = Members(c);
    for (size_t dim = 0; dim < kDims; ++dim) {
      Top2 t;
      for (size_t k = 0; k < mine.size(); ++k) {
        const double v = Value(mine[k], dim);
        if (v > t.first) {
          t = Top2{v, t.first, k};
        } else if (v > t.second) {
          t.second = v;
        }
      }
      top_[c * kDims + dim] = t;
    }
  }
  // Cost of cell `c` with its member `k` replaced by pack `with`; its slots into `slots`.
  double CostWith(size_t c, size_t k, uint32_t with, std::vector<uint32_t>* slots) {
    if (grid_.mbs == 1) {
      double cost = 0;
      for (size_t dim = 0; dim < kDims; ++dim) {
        const Top2& t = top_[c * kDims + dim];
        cost += std::max(Value(with, dim), t.at == k ? t.second : t.first);
      }
      if (slots != nullptr) {
        slots->assign(Members(c).begin(), Members(c).end());
        (*slots)[k] = with;
      }
      return cost;
    }
    members_.assign(Members(c).begin(), Members(c).end());
    members_[k] = with;
    DealToRanks(packs_, members_, grid_.group, grid_.mbs, &dealt_);
    if (slots != nullptr) *slots = dealt_;
    return CellCost(packs_, dealt_, grid_.mbs);
  }

  std::span<const PackCost> packs_;
  Grid grid_;
  Cells* cells_;
  size_t cell_size_;
  std::vector<Top2> top_;                  // per cell and dimension, with one pack per rank
  std::vector<uint32_t> members_, dealt_;  // scratch for DealToRanks
};

// Local search after the bands: for each cell and each dimension with any cost, the best swap
// of the cell's heaviest pack in it (CellSwaps::Best), pass after pass until a pass gains less
// than kSwapMinGain. Bands even out one dimension after another; a swap weighs them together
// (a mix of short and long samples whose LLM cost and vision cost disagree).
void ImproveCells(std::span<const PackCost> packs, const Grid& grid, std::span<const size_t> dims,
                  Cells* cells) {
  CellSwaps swaps(packs, grid, cells);
  for (int pass = 0; pass < kSwapPasses; ++pass) {
    const double before = cells->total;
    for (size_t c = 0; c < cells->costs.size(); ++c) {
      for (size_t dim : dims) {
        if (std::optional<CellSwaps::Swap> swap = swaps.Best(c, dim)) swaps.Apply(*swap);
      }
    }
    if (before - cells->total <= kSwapMinGain * before) break;
  }
}

Assignment BalanceMicrostep(std::span<const PackCost> packs, const Grid& grid) {
  const size_t cell_size = size_t{grid.group} * grid.mbs;
  const size_t cells = packs.size() / cell_size;
  // The dimensions to band by: the encoders with any cost (vision when none has), then the LLM.
  std::vector<size_t> encoders;
  for (size_t e = 0; e < kNumEncoders; ++e) {
    if (std::any_of(packs.begin(), packs.end(),
                    [&](const PackCost& c) { return c.encoder[e] != 0; })) {
      encoders.push_back(e);
    }
  }
  if (encoders.empty()) encoders.push_back(kVisionEncoder);
  // Every order of the dimensions (the encoders ascending, then the LLM), first to last; then
  // local search from the best few.
  std::vector<Cells> starts;
  std::vector<size_t> dims = encoders;
  dims.push_back(kLlm);
  do {
    SearchBands(packs, grid, dims, &starts);
  } while (std::next_permutation(dims.begin(), dims.end()));
  Cells best;
  best.total = std::numeric_limits<double>::infinity();
  for (Cells& start : starts) {
    ImproveCells(packs, grid, dims, &start);
    if (start.total < best.total) best = std::move(start);
  }
  const std::vector<uint32_t>& best_slots = best.slots;
  const std::vector<double>& best_costs = best.costs;
  // Cells to sync groups: each group runs ga cells; longest first onto the lightest group.
  const uint32_t groups = grid.dp / grid.group;
  std::vector<uint32_t> group_of = LptWithCapacity(best_costs, groups, grid.ga);
  std::vector<uint32_t> next_micro(groups, 0);
  Assignment assignment(packs.size());
  for (uint32_t c = 0; c < cells; ++c) {
    uint32_t g = group_of[c], m = next_micro[g]++;
    for (uint32_t r = 0; r < grid.group; ++r) {
      uint32_t rank = g * grid.group + r;
      for (uint32_t k = 0; k < grid.mbs; ++k) {
        assignment[(size_t{rank} * grid.ga + m) * grid.mbs + k] =
            best_slots[c * cell_size + size_t{r} * grid.mbs + k];
      }
    }
  }
  return assignment;
}

}  // namespace

std::string_view SyncModelName(SyncModel model) {
  switch (model) {
    case SyncModel::kStep: return "step";
    case SyncModel::kMicrostep: return "microstep";
    case SyncModel::kPipeline: return "pipeline";
  }
  return "unknown";
}

Result<SyncModel> ParseSyncModel(std::string_view name) {
  if (name == "step") return SyncModel::kStep;
  if (name == "microstep") return SyncModel::kMicrostep;
  if (name == "pipeline") return SyncModel::kPipeline;
  return Status::InvalidArgument("unknown sync model '{}' (expected step, microstep or pipeline)",
                                 name);
}

Status Grid::Validate() const {
  if (dp == 0 || ga == 0 || mbs == 0 || group == 0 || pp == 0) {
    return Status::InvalidArgument(
        "grid sizes must be at least 1 (dp {} ga {} mbs {} group {} "
        "pp {})",
        dp, ga, mbs, group, pp);
  }
  if (dp % group != 0) {
    return Status::InvalidArgument("dp {} is not divisible by the sync group size {}", dp, group);
  }
  return Status::OK();
}

double MicrostepLowerBound(std::span<const PackCost> packs, const Grid& grid) {
  if (grid.sync != SyncModel::kMicrostep || !grid.Validate().ok()) return 0;
  const size_t cell_size = size_t{grid.group} * grid.mbs;
  std::vector<double> stage(packs.size());
  double bound = 0;
  for (size_t dim = 0; dim <= kLlm; ++dim) {
    for (size_t i = 0; i < packs.size(); ++i) stage[i] = Dim(packs[i], dim);
    std::sort(stage.begin(), stage.end(), std::greater<>());
    for (size_t i = 0; i < stage.size(); i += cell_size) bound += stage[i];
  }
  return bound / (grid.dp / grid.group);
}

Result<Assignment> Balance(std::span<const PackCost> packs, const Grid& grid) {
  MMPT_RETURN_IF_ERROR(grid.Validate());
  if (packs.size() != grid.slots()) {
    return Status::InvalidArgument("{} packs for {} slots (dp {} × ga {} × mbs {})", packs.size(),
                                   grid.slots(), grid.dp, grid.ga, grid.mbs);
  }
  if (grid.sync == SyncModel::kMicrostep && grid.group > 1) return BalanceMicrostep(packs, grid);
  return BalanceStep(packs, grid);
}

Estimate Evaluate(std::span<const PackCost> packs, std::span<const uint32_t> assignment,
                  const Grid& grid) {
  Estimate e;
  const uint32_t groups = grid.dp / grid.group;
  // Per (rank, micro) sums of the cost vector.
  std::vector<PackCost> slot(size_t{grid.dp} * grid.ga);
  double total = 0, min_slot = std::numeric_limits<double>::infinity();
  for (size_t rm = 0; rm < slot.size(); ++rm) {
    for (uint32_t k = 0; k < grid.mbs; ++k) {
      const PackCost& c = packs[assignment[rm * grid.mbs + k]];
      for (size_t d = 0; d < kNumEncoders; ++d) slot[rm].encoder[d] += c.encoder[d];
      slot[rm].llm += c.llm;
    }
    total += slot[rm].Total();
    min_slot = std::min(min_slot, slot[rm].Total());
  }
  // Imbalance within sync groups, every micro-step, per dimension (the encoders, then the LLM).
  std::array<double, kNumEncoders + 1> max_ratio, sum_ratio;
  max_ratio.fill(1.0);
  sum_ratio.fill(0.0);
  std::vector<double> group_micro(size_t{groups} * grid.ga, 0.0);
  for (uint32_t g = 0; g < groups; ++g) {
    for (uint32_t m = 0; m < grid.ga; ++m) {
      double step = 0;
      for (size_t d = 0; d <= kNumEncoders; ++d) {
        double max = 0, sum = 0;
        for (uint32_t r = g * grid.group; r < (g + 1) * grid.group; ++r) {
          const double x = Dim(slot[size_t{r} * grid.ga + m], d);
          max = std::max(max, x);
          sum += x;
        }
        const double ratio = sum > 0 ? max * grid.group / sum : 1.0;
        max_ratio[d] = std::max(max_ratio[d], ratio);
        sum_ratio[d] += ratio;
        step += max;
      }
      group_micro[size_t{g} * grid.ga + m] = step;
    }
  }
  const double cells = static_cast<double>(groups) * grid.ga;
  for (size_t d = 0; d < kNumEncoders; ++d) {
    e.max_encoder_imbalance[d] = max_ratio[d];
    e.mean_encoder_imbalance[d] = sum_ratio[d] / cells;
  }
  e.max_llm_imbalance = max_ratio[kLlm];
  e.mean_llm_imbalance = sum_ratio[kLlm] / cells;

  // A rank's total over its micro-steps.
  auto rank_total = [&](uint32_t r) {
    double sum = 0;
    for (uint32_t m = 0; m < grid.ga; ++m) sum += slot[size_t{r} * grid.ga + m].Total();
    return sum;
  };
  e.lower_bound_seconds = total / grid.dp;
  switch (grid.sync) {
    case SyncModel::kStep:
      for (uint32_t r = 0; r < grid.dp; ++r)
        e.step_seconds = std::max(e.step_seconds, rank_total(r));
      break;
    case SyncModel::kMicrostep:
      for (uint32_t g = 0; g < groups; ++g) {
        double sum = 0;
        for (uint32_t m = 0; m < grid.ga; ++m) sum += group_micro[size_t{g} * grid.ga + m];
        e.step_seconds = std::max(e.step_seconds, sum);
      }
      break;
    case SyncModel::kPipeline: {
      const double pp = grid.pp, edge = (pp - 1.0) / pp;
      for (uint32_t r = 0; r < grid.dp; ++r) {
        const double first = slot[size_t{r} * grid.ga].Total();
        const double last = slot[size_t{r} * grid.ga + grid.ga - 1].Total();
        e.step_seconds =
            std::max(e.step_seconds, rank_total(r) / pp + edge * (first / 3 + 2 * last / 3));
      }
      e.lower_bound_seconds = total / grid.dp / pp + edge * min_slot;
      break;
    }
  }
  return e;
}

}  // namespace mmpt::balance
