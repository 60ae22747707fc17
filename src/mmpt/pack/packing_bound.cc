#include "mmpt/pack/packing_bound.h"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace mmpt::pack {
namespace {

constexpr uint32_t kPricingCapacity = 2048;  // knapsack capacity in grains
constexpr double kProvenGap = 2e-4;          // stop once the LP optimum is proven this close
constexpr uint32_t kMaxPatterns = 50000;
constexpr size_t kPatternsPerRound = 16;

using Problem = std::unique_ptr<glp_prob, decltype(&glp_delete_prob)>;

// Prices pack patterns: an unbounded knapsack by dynamic programming over the capacity in
// grains, maximizing Σ value × count.
class Pricer {
 public:
  Pricer(std::span<const uint32_t> sizes, uint32_t capacity)
      : sizes_(sizes), capacity_(capacity), best_(capacity + 1), last_(capacity + 1) {}

  // Fill the table for `values`; returns the best pattern's value.
  double Price(std::span<const double> values) {
    std::vector<uint32_t> useful;
    for (uint32_t i = 0; i < sizes_.size(); ++i) {
      if (values[i] > 1e-12) useful.push_back(i);
    }
    best_[0] = 0;
    last_[0] = -1;
    for (uint32_t c = 1; c <= capacity_; ++c) {
      best_[c] = best_[c - 1];
      last_[c] = -1;
      for (uint32_t i : useful) {
        if (sizes_[i] <= c && best_[c - sizes_[i]] + values[i] > best_[c]) {
          best_[c] = best_[c - sizes_[i]] + values[i];
          last_[c] = static_cast<int32_t>(i);
        }
      }
    }
    return best_[capacity_];
  }

  // Patterns worth more than `threshold`: the best one for the full capacity, and the best
  // ending with each size (the best pattern of the capacity left, plus that size), the most
  // valuable first, at most `limit`. Several a round cut the master's re-solves.
  std::vector<std::vector<uint32_t>> Patterns(std::span<const double> values, double threshold,
                                              size_t limit) const {
    std::vector<std::pair<double, uint32_t>> ends;  // (value, size index)
    for (uint32_t i = 0; i < sizes_.size(); ++i) {
      if (values[i] > 1e-12 && sizes_[i] <= capacity_) {
        const double value = best_[capacity_ - sizes_[i]] + values[i];
        if (value > threshold) ends.emplace_back(value, i);
      }
    }
    std::sort(ends.begin(), ends.end(), std::greater<>());
    std::vector<std::vector<uint32_t>> patterns;
    for (const auto& [value, i] : ends) {
      if (patterns.size() == limit) break;
      std::vector<uint32_t> counts(sizes_.size(), 0);
      ++counts[i];
      for (uint32_t c = capacity_ - sizes_[i]; c > 0;) {
        if (last_[c] < 0) {
          --c;
        } else {
          ++counts[last_[c]];
          c -= sizes_[last_[c]];
        }
      }
      if (std::find(patterns.begin(), patterns.end(), counts) == patterns.end()) {
        patterns.push_back(std::move(counts));
      }
    }
    return patterns;
  }

 private:
  std::span<const uint32_t> sizes_;
  uint32_t capacity_;
  std::vector<double> best_;
  std::vector<int32_t> last_;  // the size taken last at each capacity (-1: none)
};

}  // namespace

Result<PackingBound> BoundPacking(std::span<const uint32_t> item_tokens, uint32_t seq_len) {
  const auto start = std::chrono::steady_clock::now();
  if (seq_len == 0) return Status::InvalidArgument("packing bound: seq_len 0");
  PackingBound bound;
  bound.grain_tokens = std::max<uint32_t>(1, (seq_len + kPricingCapacity - 1) / kPricingCapacity);
  const uint32_t capacity = seq_len / bound.grain_tokens;
  // Demand per size in grains (rounded down: a relaxation). Items under a grain take no room.
  std::map<uint32_t, double> demand;
  uint64_t total_tokens = 0;
  for (uint32_t tokens : item_tokens) {
    if (tokens > seq_len) {
      return Status::InvalidArgument("packing bound: an item of {} tokens is over seq_len {}",
                                     tokens, seq_len);
    }
    total_tokens += tokens;
    if (tokens >= bound.grain_tokens) demand[tokens / bound.grain_tokens] += 1;
  }
  if (demand.empty()) {
    bound.efficiency = total_tokens > 0 ? 1 : 0;  // nothing takes room: one pack at most
    bound.packs = total_tokens > 0 ? 1 : 0;
    return bound;
  }
  std::vector<uint32_t> sizes;
  std::vector<double> demands;
  for (const auto& [size, count] : demand) {
    sizes.push_back(size);
    demands.push_back(count);
  }
  const int rows = static_cast<int>(sizes.size());

  // Master: minimize Σ x_p over patterns p, Σ_p count_ip x_p ≥ demand_i, x ≥ 0. It starts
  // from one pattern per size (as many of it as fit), so it is always feasible.
  Problem lp(glp_create_prob(), &glp_delete_prob);
  glp_set_obj_dir(lp.get(), GLP_MIN);
  glp_add_rows(lp.get(), rows);
  for (int i = 0; i < rows; ++i) glp_set_row_bnds(lp.get(), i + 1, GLP_LO, demands[i], 0);
  std::vector<int> index(rows + 1);
  std::vector<double> value(rows + 1);
  auto add_pattern = [&](const std::vector<uint32_t>& counts) {
    int n = 0;
    for (int i = 0; i < rows; ++i) {
      if (counts[i] > 0) {
        ++n;
        index[n] = i + 1;
        value[n] = counts[i];
      }
    }
    const int col = glp_add_cols(lp.get(), 1);
    glp_set_col_bnds(lp.get(), col, GLP_LO, 0, 0);
    glp_set_obj_coef(lp.get(), col, 1);
    glp_set_mat_col(lp.get(), col, n, index.data(), value.data());
    ++bound.patterns;
  };
  for (int i = 0; i < rows; ++i) {
    std::vector<uint32_t> counts(rows, 0);
    counts[i] = capacity / sizes[i];
    add_pattern(counts);
  }
  glp_smcp options;
  glp_init_smcp(&options);
  options.msg_lev = GLP_MSG_OFF;
  std::vector<double> duals(rows);
  Pricer pricer(sizes, capacity);
  double proven = 0;
  for (;;) {
    if (int rc = glp_simplex(lp.get(), &options); rc != 0 || glp_get_status(lp.get()) != GLP_OPT) {
      return Status::Internal("packing bound: GLPK simplex failed (code {}, status {})", rc,
                              glp_get_status(lp.get()));
    }
    const double master = glp_get_obj_val(lp.get());
    for (int i = 0; i < rows; ++i) duals[i] = std::max(0.0, glp_get_row_dual(lp.get(), i + 1));
    const double price = pricer.Price(duals);
    // Farley: no pattern is worth more than `price` in the duals, so the LP optimum is at least
    // master / price (and the master's value once no pattern prices above 1).
    proven = std::max(proven, master / std::max(1.0, price));
    if (price <= 1 + 1e-9 || proven >= master * (1 - kProvenGap) ||
        bound.patterns >= kMaxPatterns) {
      break;
    }
    for (const auto& pattern : pricer.Patterns(duals, 1 + 1e-9, kPatternsPerRound)) {
      add_pattern(pattern);
    }
  }
  // Rounded sizes can make the LP smaller than the tokens themselves need: take the larger.
  bound.packs = std::max(proven, static_cast<double>(total_tokens) / seq_len);
  // Guard against the LP's floating point: a bound a hair above an integer stays that integer.
  const double packs = std::max(1.0, std::ceil(bound.packs - 1e-6));
  bound.efficiency = static_cast<double>(total_tokens) / (packs * seq_len);
  bound.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return bound;
}

}  // namespace mmpt::pack
