#include "mmpt/plan/planner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "mmpt/core/hash.h"
#include "mmpt/pack/fill_bound.h"
#include "mmpt/pack/refill.h"
#include "mmpt/plan/assemble_internal.h"
#include "mmpt/plan/cp_stage.h"

namespace mmpt::plan {
namespace {

constexpr char kStateMagic[8] = {'M', 'M', 'P', 'T', 'P', 'S', 'T', '1'};
// Version 2 records the settings a state was saved under by name (version 1: their hash), so a
// restore under others says which differ. Version 3: allow_repeat is a setting, and without it
// the carried samples may name a row twice (a draw deferred beside its earlier copy).
constexpr uint32_t kStateVersion = 3;

template <typename T>
void Put(std::string* out, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian hosts only (checked in store/meta.h)
  out->append(bytes, sizeof(T));
}

// Reads fixed-width values from a byte string, remembering if it ran past the end.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  T Get() {
    T value{};
    if (pos_ + sizeof(T) > bytes_.size()) {
      overrun_ = true;
      return value;
    }
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  // A string stored as its uint32 length, then its bytes.
  std::string GetString() {
    const uint32_t size = Get<uint32_t>();
    if (overrun_ || pos_ + size > bytes_.size()) {
      overrun_ = true;
      return {};
    }
    std::string value(bytes_.substr(pos_, size));
    pos_ += size;
    return value;
  }
  bool overrun() const { return overrun_; }
  size_t position() const { return pos_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
  bool overrun_ = false;
};

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
Status CheckCorpusFillsAStep(const cost::SampleTable& table, const PlannerConfig& config,
                             const SampleOrder& order,
                             std::span<const internal::Placeable> placeable) {
  const Layout& l = config.layout;
  uint64_t samples = 0;
  double tokens_per_draw = 0;
  for (uint32_t s = 0; s < placeable.size(); ++s) {
    samples += placeable[s].samples;
    if (order.Share(s) > 0) {
      tokens_per_draw += order.Share(s) * static_cast<double>(placeable[s].tokens) /
                         static_cast<double>(table.source_size(s));
    }
  }
  if (samples < l.packs_per_step()) {
    return Status::InvalidArgument(
        "step needs {} packs (dp {} × ga {} × mbs {}) but the corpus has {} samples that fit "
        "seq_len {}, and a step holds each sample once; lower --dp/--ga/--mbs or pass "
        "--allow-repeat (Python: allow_repeat=True)",
        l.packs_per_step(), l.dp, l.ga, l.mbs, samples, l.seq_len);
  }
  const double draws = PoolTarget(config) / tokens_per_draw;
  const bool blended = std::count_if(placeable.begin(), placeable.end(),
                                     [](const internal::Placeable& p) { return p.tokens > 0; }) > 1;
  for (uint32_t s = 0; s < placeable.size(); ++s) {
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

Planner::Planner(const cost::SampleTable& table, const cost::CostedSamples& costs,
                 const cost::CostModel& model, PlannerConfig config, SampleOrder order,
                 std::vector<uint64_t> placeable)
    : table_(&table), costs_(&costs), model_(&model), config_(std::move(config)),
      order_(std::move(order)), placeable_(std::move(placeable)) {
  if (!config_.allow_repeat) in_step_.assign(table.num_samples(), false);
}

Result<Planner> Planner::Create(const cost::SampleTable& table, const cost::CostedSamples& costs,
                                const cost::CostModel& model, PlannerConfig config) {
  MMPT_RETURN_IF_ERROR(config.Validate());
  if (costs.image_tokens.size() != table.num_samples() ||
      costs.images.size() != table.num_images()) {
    return Status::InvalidArgument("costs are for another table ({} samples, table has {})",
                                   costs.image_tokens.size(), table.num_samples());
  }
  if (!config.source_weights.empty() && config.source_weights.size() != table.num_sources()) {
    return Status::InvalidArgument("{} source weights for {} sources",
                                   config.source_weights.size(), table.num_sources());
  }
  std::vector<uint64_t> sizes(table.num_sources());
  for (size_t s = 0; s < sizes.size(); ++s) sizes[s] = table.source_size(s);
  MMPT_ASSIGN_OR_RETURN(SampleOrder order,
                        SampleOrder::Create(sizes, config.source_weights, config.seed));
  MMPT_ASSIGN_OR_RETURN(std::vector<internal::Placeable> placeable,
                        internal::PlaceableBySource(table, costs, config, order));
  if (!config.allow_repeat) {
    MMPT_RETURN_IF_ERROR(CheckCorpusFillsAStep(table, config, order, placeable));
  }
  std::vector<uint64_t> samples;
  for (const internal::Placeable& p : placeable) samples.push_back(p.samples);
  return Planner(table, costs, model, std::move(config), std::move(order), std::move(samples));
}

Result<StepPlan> Planner::PlanStep() {
  auto start = std::chrono::steady_clock::now();
  stats_ = StepStats{};
  const Layout& layout = config_.layout;
  const uint32_t seq_len = layout.seq_len;
  const uint64_t num_packs = layout.packs_per_step();
  const double target_tokens = PoolTarget(config_);

  // 1. The pool: last step's carry, then new samples until the step's capacity is covered.
  // Without allow_repeat a sample the pool already holds is deferred (to `deferred`, carried
  // into the next step).
  std::vector<PlacedSample> carried_in = std::move(carry_);
  std::vector<uint8_t> carried_age = std::move(carry_age_);
  carry_.clear();
  carry_age_.clear();
  std::vector<PlacedSample> pool;
  std::vector<uint8_t> age;  // of the carried prefix of the pool
  std::vector<std::pair<PlacedSample, uint8_t>> deferred;  // with the steps each waited
  std::vector<uint64_t> dropped_rows;
  std::vector<uint64_t> pooled(config_.allow_repeat ? 0 : table_->num_sources(), 0);
  double pool_tokens = 0;
  pool.reserve(carried_in.size() + static_cast<size_t>(target_tokens / 64));
  // Whether `sample` joins the pool (false: the pool holds it, so it is deferred).
  auto join = [&](const PlacedSample& sample, uint32_t source, uint8_t waited) {
    if (!config_.allow_repeat) {
      if (in_step_[sample.row]) {
        deferred.emplace_back(sample, waited);
        return false;
      }
      in_step_[sample.row] = true;
      ++pooled[source];
    }
    pool.push_back(sample);
    pool_tokens += sample.tokens;
    return true;
  };
  for (size_t i = 0; i < carried_in.size(); ++i) {
    if (join(carried_in[i], table_->SourceOfRow(carried_in[i].row), carried_age[i])) {
      age.push_back(carried_age[i]);
    }
  }
  const size_t num_carried_in = pool.size();
  bool any_old = false;
  for (uint8_t a : age) any_old |= a >= config_.max_carry_steps;
  // Set at a draw of a source whose every sample the pool holds: Create checked that the blend
  // asks no source for more samples a step than it has, on average, but near that limit a
  // step can still meet one. The step then ends short of its tokens once it has a sample per
  // pack (it has, at the latest, when the pool holds the whole corpus), rather than the
  // stream running ahead of what steps can hold.
  bool exhausted = false;
  auto draw_until = [&](double target) {
    while (pool_tokens < target && !(exhausted && pool.size() >= num_packs)) {
      SampleOrder::Draw draw = order_.Next();
      uint64_t row = table_->source_begin[draw.source] + draw.index;
      ++stats_.drawn;
      pack::Fitted fit = internal::FitRow(*table_, *costs_, config_, row);
      if (fit.dropped) {
        dropped_rows.push_back(row);
        continue;
      }
      stats_.truncated += fit.truncated;
      exhausted |= !config_.allow_repeat && pooled[draw.source] == placeable_[draw.source];
      join({row, fit.tokens, fit.text_tokens}, draw.source, 0);
    }
  };
  draw_until(target_tokens);
  // Items each a large share of a pack (photo posts) fill packs only in certain combinations:
  // a larger pool gives the packer that choice, and what it leaves carries over
  // (docs/benchmarks.md). Each sample once a step: only where the corpus holds several pools,
  // else the draws the pool already holds would be deferred faster than steps place them.
  if (config_.pool_slack < kLargeItemPoolSlack && !exhausted &&
      (config_.allow_repeat || kLargePoolCorpusFactor * pool.size() <= table_->num_samples())) {
    std::vector<uint32_t> pool_tokens_each(pool.size());
    for (size_t i = 0; i < pool.size(); ++i) pool_tokens_each[i] = pool[i].tokens;
    if (pack::LargeItems(pool_tokens_each, seq_len)) {
      draw_until(static_cast<double>(num_packs) * seq_len * (1.0 + kLargeItemPoolSlack));
    }
  }
  // The marks are needed only while drawing: clear them for the next step.
  if (!config_.allow_repeat) {
    for (const PlacedSample& s : pool) in_step_[s.row] = false;
  }
  stats_.dropped = dropped_rows.size();
  stats_.deferred = deferred.size();
  stats_.source_exhausted = exhausted;

  // 2. Pack the pool; keep the step's packs: those holding a long-carried sample, then the
  // fullest; everything else carries over.
  std::vector<pack::PackItem> items(pool.size());
  for (size_t i = 0; i < pool.size(); ++i) {
    uint64_t row = pool[i].row;
    items[i] = {pool[i].tokens,
                static_cast<uint32_t>(table_->image_begin[row + 1] - table_->image_begin[row])};
  }
  pack::PackConstraints constraints{seq_len, config_.max_samples_per_pack,
                                    config_.max_images_per_pack};
  MMPT_ASSIGN_OR_RETURN(pack::Packing packing,
                        pack::PackItems(items, constraints, config_.algorithm));
  stats_.bound = pack::BoundFill(items, seq_len, num_packs);
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
  std::vector<std::vector<uint32_t>> step_packs(kept);
  for (uint64_t k = 0; k < kept; ++k) {
    chosen[ranked[k]] = 1;
    auto pack = packing.Pack(ranked[k]);
    step_packs[k].assign(pack.begin(), pack.end());
  }
  if (kept < num_packs) HalveUntil(items, num_packs, &step_packs);
  std::vector<uint32_t> spare;
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
  internal::PackList packs;
  packs.begin.reserve(num_packs + 1);
  packs.samples.reserve(pool.size());
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
  std::vector<std::pair<PlacedSample, uint8_t>> carried = std::move(deferred);
  for (uint32_t i : spare) carried.emplace_back(pool[i], i < num_carried_in ? age[i] : 0);
  for (auto& [sample, waited] : carried) {
    waited = static_cast<uint8_t>(std::min<uint32_t>(waited + 1u, 255u));
    stats_.max_carry_age = std::max<uint32_t>(stats_.max_carry_age, waited);
  }
  std::sort(carried.begin(), carried.end(), [](const auto& a, const auto& b) {
    return a.first.row != b.first.row ? a.first.row < b.first.row : a.second > b.second;
  });
  for (const auto& [sample, waited] : carried) {
    carry_.push_back(sample);
    carry_age_.push_back(waited);
  }

  // 3. Balance the packs over (rank, micro-step) and assemble the plan.
  std::vector<balance::PackCost> pack_costs =
      internal::CostPacks(packs, *costs_, *model_, seq_len);
  balance::Grid grid = internal::GridOf(layout);
  MMPT_ASSIGN_OR_RETURN(balance::Assignment assignment, balance::Balance(pack_costs, grid));
  StepPlan plan = internal::Assemble(step_, layout, packs, assignment, pack_costs, *table_,
                                     *costs_, dropped_rows);
  // plan ▸ cp: every pack is split over its CP group (padded as TE and sequence parallelism
  // need), and its images assigned to the CP ranks that encode them.
  MMPT_RETURN_IF_ERROR(AddCpStage(plan, config_.cp_vision));
  plan.estimate = balance::Evaluate(pack_costs, assignment, grid);

  stats_.packs = num_packs;
  stats_.placed = packs.samples.size();
  stats_.carried = carry_.size();
  stats_.lower_bound_packs = (stats_.tokens + seq_len - 1) / seq_len;
  stats_.efficiency = static_cast<double>(stats_.tokens) / (static_cast<double>(num_packs) * seq_len);
  ++step_;
  stats_.plan_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

std::vector<std::pair<std::string, std::string>> Planner::Settings() const {
  const Layout& l = config_.layout;
  auto list = [](const auto& values) { return fmt::format("{}", fmt::join(values, ",")); };
  return {{"dp", fmt::format("{}", l.dp)},
          {"tp", fmt::format("{}", l.tp)},
          {"pp", fmt::format("{}", l.pp)},
          {"cp", fmt::format("{}", l.cp)},
          {"ep", fmt::format("{}", l.ep)},
          {"ga", fmt::format("{}", l.ga)},
          {"mbs", fmt::format("{}", l.mbs)},
          {"seq_len", fmt::format("{}", l.seq_len)},
          {"sync", std::string(SyncModelName(l.sync))},
          {"overlong", std::string(pack::OverlongPolicyName(config_.overlong))},
          {"algorithm", std::string(pack::AlgorithmName(config_.algorithm))},
          {"max_samples_per_pack", fmt::format("{}", config_.max_samples_per_pack)},
          {"max_images_per_pack", fmt::format("{}", config_.max_images_per_pack)},
          {"max_carry_steps", fmt::format("{}", config_.max_carry_steps)},
          {"seed", fmt::format("{}", config_.seed)},
          {"pool_slack", fmt::format("{}", config_.pool_slack)},
          {"allow_repeat", config_.allow_repeat ? "yes" : "no"},
          {"source_weights", list(config_.source_weights)},
          {"samples", fmt::format("{}", table_->num_samples())},
          {"images", fmt::format("{}", table_->num_images())},
          {"source_begin", list(table_->source_begin)}};
}

std::string Planner::SaveState() const {
  std::string out(kStateMagic, sizeof(kStateMagic));
  Put(&out, kStateVersion);
  const auto settings = Settings();
  Put(&out, static_cast<uint32_t>(settings.size()));
  for (const auto& [name, value] : settings) {
    Put(&out, static_cast<uint32_t>(name.size()));
    out += name;
    Put(&out, static_cast<uint32_t>(value.size()));
    out += value;
  }
  Put(&out, step_);
  Put(&out, static_cast<uint32_t>(order_.cursors().size()));
  for (const SourceCursor& c : order_.cursors()) {
    Put(&out, c.position);
    Put(&out, c.epoch);
    Put(&out, c.pass);
  }
  // Carried samples: rows ascending as varint deltas, then one age byte each (a few bytes per
  // sample); their token counts follow from the rows.
  Put(&out, static_cast<uint64_t>(carry_.size()));
  uint64_t previous = 0;
  for (const PlacedSample& sample : carry_) {
    uint64_t delta = sample.row - previous;
    previous = sample.row;
    while (delta >= 0x80) {
      out.push_back(static_cast<char>((delta & 0x7f) | 0x80));
      delta >>= 7;
    }
    out.push_back(static_cast<char>(delta));
  }
  out.append(reinterpret_cast<const char*>(carry_age_.data()), carry_age_.size());
  Put(&out, Hash64(out));
  return out;
}

Status Planner::RestoreState(std::string_view bytes) {
  if (bytes.size() < sizeof(kStateMagic) + 8 ||
      std::memcmp(bytes.data(), kStateMagic, sizeof(kStateMagic)) != 0) {
    return Status::Corrupt("planner state: bad magic or too short ({} bytes)", bytes.size());
  }
  uint64_t stored_hash;
  std::memcpy(&stored_hash, bytes.data() + bytes.size() - 8, 8);
  if (Hash64(bytes.substr(0, bytes.size() - 8)) != stored_hash) {
    return Status::Corrupt("planner state: checksum mismatch");
  }
  Reader in(bytes.substr(sizeof(kStateMagic), bytes.size() - sizeof(kStateMagic) - 8));
  if (uint32_t version = in.Get<uint32_t>(); version != kStateVersion) {
    return Status::Corrupt("planner state: version {} (this build reads {})", version,
                           kStateVersion);
  }
  // The settings the state was saved under, each compared with this planner's by name.
  std::map<std::string, std::string> saved;
  const uint32_t num_settings = in.Get<uint32_t>();
  for (uint32_t i = 0; i < num_settings && !in.overrun(); ++i) {
    std::string name = in.GetString();
    saved[name] = in.GetString();
  }
  if (in.overrun()) return Status::Corrupt("planner state: truncated");
  std::vector<std::string> differences;
  for (const auto& [name, value] : Settings()) {
    auto it = saved.find(name);
    const std::string then = it == saved.end() ? "(not recorded)" : it->second;
    if (then != value) {
      differences.push_back(fmt::format("saved at {} {}, now {} {}", name, then, name, value));
    }
  }
  if (!differences.empty()) {
    return Status::InvalidArgument("planner state is of another corpus or config: {}",
                                   fmt::join(differences, "; "));
  }
  uint64_t step = in.Get<uint64_t>();
  uint32_t num_sources = in.Get<uint32_t>();
  if (num_sources != table_->num_sources()) {
    return Status::InvalidArgument("planner state has {} sources, the corpus {}", num_sources,
                                   table_->num_sources());
  }
  std::vector<SourceCursor> cursors(num_sources);
  for (SourceCursor& c : cursors) {
    c.position = in.Get<uint64_t>();
    c.epoch = in.Get<uint64_t>();
    c.pass = in.Get<uint64_t>();
  }
  uint64_t num_carry = in.Get<uint64_t>();
  if (in.overrun() || num_carry > bytes.size()) {
    return Status::Corrupt("planner state: truncated");
  }
  std::vector<PlacedSample> carry(num_carry);
  std::vector<uint8_t> carry_age(num_carry);
  uint64_t row = 0;
  for (size_t i = 0; i < num_carry && !in.overrun(); ++i) {
    uint64_t delta = 0;
    for (int shift = 0;; shift += 7) {
      uint8_t byte = in.Get<uint8_t>();
      if (in.overrun() || shift > 63) break;
      delta |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) break;
    }
    row += delta;
    if (row >= table_->num_samples()) {
      return Status::Corrupt("planner state: carried sample {} has row {} past the corpus", i,
                             row);
    }
    pack::Fitted fit = internal::FitRow(*table_, *costs_, config_, row);
    if (fit.dropped) {
      return Status::Corrupt("planner state: carried sample {} (row {}) cannot be packed", i, row);
    }
    carry[i] = {row, fit.tokens, fit.text_tokens};
  }
  for (size_t i = 0; i < num_carry; ++i) carry_age[i] = in.Get<uint8_t>();
  if (in.overrun()) return Status::Corrupt("planner state: truncated");
  MMPT_RETURN_IF_ERROR(order_.Restore(cursors));
  step_ = step;
  carry_ = std::move(carry);
  carry_age_ = std::move(carry_age);
  return Status::OK();
}

}  // namespace mmpt::plan
