#include "mmpt/balance/balancer.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <queue>

namespace mmpt::balance {
namespace {

double Total(const PackCost& c) { return c.vision + c.llm; }

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
void DealToRanks(std::span<const PackCost> packs, std::vector<uint32_t> members, uint32_t ranks,
                 uint32_t mbs, std::vector<uint32_t>* out) {
  std::stable_sort(members.begin(), members.end(), [&](uint32_t a, uint32_t b) {
    return Total(packs[a]) > Total(packs[b]);
  });
  out->assign(members.size(), 0);
  for (size_t i = 0; i < members.size(); ++i) {
    size_t round = i / ranks, pos = i % ranks;
    size_t rank = (round % 2 == 0) ? pos : ranks - 1 - pos;
    (*out)[rank * mbs + round] = members[i];
  }
}

// Cost of one sync group's micro-step: max vision + max LLM over its ranks' slot sums.
double CellCost(std::span<const PackCost> packs, std::span<const uint32_t> slots, uint32_t mbs) {
  double max_v = 0, max_l = 0;
  for (size_t r = 0; r * mbs < slots.size(); ++r) {
    double v = 0, l = 0;
    for (uint32_t k = 0; k < mbs; ++k) {
      v += packs[slots[r * mbs + k]].vision;
      l += packs[slots[r * mbs + k]].llm;
    }
    max_v = std::max(max_v, v);
    max_l = std::max(max_l, l);
  }
  return max_v + max_l;
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

// Cells for a given band count: packs sorted by vision, cut into `bands` runs of whole cells,
// each run sorted by LLM cost and cut into cells. Returns the cells' packs, cell after cell.
std::vector<uint32_t> BandCells(std::span<const PackCost> packs, std::span<const uint32_t> by_vision,
                                size_t cell_size, size_t bands) {
  const size_t cells = packs.size() / cell_size;
  std::vector<uint32_t> out(by_vision.begin(), by_vision.end());
  for (size_t b = 0; b < bands; ++b) {
    size_t begin = (cells * b / bands) * cell_size, end = (cells * (b + 1) / bands) * cell_size;
    std::stable_sort(out.begin() + static_cast<ptrdiff_t>(begin),
                     out.begin() + static_cast<ptrdiff_t>(end), [&](uint32_t x, uint32_t y) {
                       return packs[x].llm > packs[y].llm;
                     });
  }
  return out;
}

Assignment BalanceMicrostep(std::span<const PackCost> packs, const Grid& grid) {
  const size_t cell_size = size_t{grid.group} * grid.mbs;
  const size_t cells = packs.size() / cell_size;
  std::vector<uint32_t> by_vision(packs.size());
  std::iota(by_vision.begin(), by_vision.end(), 0);
  std::stable_sort(by_vision.begin(), by_vision.end(), [&](uint32_t a, uint32_t b) {
    if (packs[a].vision != packs[b].vision) return packs[a].vision > packs[b].vision;
    return packs[a].llm > packs[b].llm;
  });
  // Try band counts 1, 2, 4, ..., cells and keep the one with the least Σ cell cost.
  std::vector<uint32_t> best_slots;
  std::vector<double> best_costs;
  double best_total = std::numeric_limits<double>::infinity();
  std::vector<uint32_t> dealt;
  for (size_t bands = 1;; bands *= 2) {
    bands = std::min(bands, cells);
    std::vector<uint32_t> order = BandCells(packs, by_vision, cell_size, bands);
    std::vector<uint32_t> slots(packs.size());
    std::vector<double> costs(cells);
    double total = 0;
    for (size_t c = 0; c < cells; ++c) {
      std::vector<uint32_t> members(order.begin() + static_cast<ptrdiff_t>(c * cell_size),
                                    order.begin() + static_cast<ptrdiff_t>((c + 1) * cell_size));
      DealToRanks(packs, std::move(members), grid.group, grid.mbs, &dealt);
      std::copy(dealt.begin(), dealt.end(), slots.begin() + static_cast<ptrdiff_t>(c * cell_size));
      costs[c] = CellCost(packs, dealt, grid.mbs);
      total += costs[c];
    }
    if (total < best_total) {
      best_total = total;
      best_slots = std::move(slots);
      best_costs = std::move(costs);
    }
    if (bands >= cells) break;
  }
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
    case SyncModel::kStep:
      return "step";
    case SyncModel::kMicrostep:
      return "microstep";
    case SyncModel::kPipeline:
      return "pipeline";
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
    return Status::InvalidArgument("grid sizes must be at least 1 (dp {} ga {} mbs {} group {} "
                                   "pp {})",
                                   dp, ga, mbs, group, pp);
  }
  if (dp % group != 0) {
    return Status::InvalidArgument("dp {} is not divisible by the sync group size {}", dp, group);
  }
  return Status::OK();
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
  // Per (rank, micro) sums.
  std::vector<double> v(size_t{grid.dp} * grid.ga, 0.0), l(v.size(), 0.0);
  double total = 0, min_slot = std::numeric_limits<double>::infinity();
  for (uint32_t r = 0; r < grid.dp; ++r) {
    for (uint32_t m = 0; m < grid.ga; ++m) {
      size_t rm = size_t{r} * grid.ga + m;
      for (uint32_t k = 0; k < grid.mbs; ++k) {
        const PackCost& c = packs[assignment[rm * grid.mbs + k]];
        v[rm] += c.vision;
        l[rm] += c.llm;
      }
      total += v[rm] + l[rm];
      min_slot = std::min(min_slot, v[rm] + l[rm]);
    }
  }
  // Imbalance within sync groups, every micro-step.
  double sum_v_ratio = 0, sum_l_ratio = 0;
  size_t cells = 0;
  e.max_vision_imbalance = e.max_llm_imbalance = 1.0;
  std::vector<double> group_micro(size_t{groups} * grid.ga, 0.0);
  for (uint32_t g = 0; g < groups; ++g) {
    for (uint32_t m = 0; m < grid.ga; ++m) {
      double max_v = 0, max_l = 0, sum_v = 0, sum_l = 0;
      for (uint32_t r = g * grid.group; r < (g + 1) * grid.group; ++r) {
        size_t rm = size_t{r} * grid.ga + m;
        max_v = std::max(max_v, v[rm]);
        max_l = std::max(max_l, l[rm]);
        sum_v += v[rm];
        sum_l += l[rm];
      }
      double rv = sum_v > 0 ? max_v * grid.group / sum_v : 1.0;
      double rl = sum_l > 0 ? max_l * grid.group / sum_l : 1.0;
      e.max_vision_imbalance = std::max(e.max_vision_imbalance, rv);
      e.max_llm_imbalance = std::max(e.max_llm_imbalance, rl);
      sum_v_ratio += rv;
      sum_l_ratio += rl;
      ++cells;
      group_micro[size_t{g} * grid.ga + m] = max_v + max_l;
    }
  }
  e.mean_vision_imbalance = sum_v_ratio / cells;
  e.mean_llm_imbalance = sum_l_ratio / cells;

  e.lower_bound_seconds = total / grid.dp;
  switch (grid.sync) {
    case SyncModel::kStep:
      for (uint32_t r = 0; r < grid.dp; ++r) {
        double sum = 0;
        for (uint32_t m = 0; m < grid.ga; ++m) sum += v[size_t{r} * grid.ga + m] + l[size_t{r} * grid.ga + m];
        e.step_seconds = std::max(e.step_seconds, sum);
      }
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
        double sum = 0;
        for (uint32_t m = 0; m < grid.ga; ++m) sum += v[size_t{r} * grid.ga + m] + l[size_t{r} * grid.ga + m];
        double first = v[size_t{r} * grid.ga] + l[size_t{r} * grid.ga];
        double last = v[size_t{r} * grid.ga + grid.ga - 1] + l[size_t{r} * grid.ga + grid.ga - 1];
        e.step_seconds = std::max(e.step_seconds, sum / pp + edge * (first / 3 + 2 * last / 3));
      }
      e.lower_bound_seconds = total / grid.dp / pp + edge * min_slot;
      break;
    }
  }
  return e;
}

}  // namespace mmpt::balance
