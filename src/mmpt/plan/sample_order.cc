#include "mmpt/plan/sample_order.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace mmpt::plan {
namespace {

// Stride of weight share 1.0; a share w advances the pass by kStrideScale / w.
constexpr double kStrideScale = 4294967296.0;  // 2^32
// Passes are shifted down together before they could overflow.
constexpr uint64_t kPassRebase = uint64_t{1} << 62;

}  // namespace

Result<SampleOrder> SampleOrder::Create(std::span<const uint64_t> source_sizes,
                                        std::span<const double> weights, uint64_t seed) {
  if (!weights.empty() && weights.size() != source_sizes.size()) {
    return Status::InvalidArgument("{} source weights for {} sources", weights.size(),
                                   source_sizes.size());
  }
  SampleOrder order;
  order.sizes_.assign(source_sizes.begin(), source_sizes.end());
  order.seed_ = seed;
  std::vector<double> w(source_sizes.size());
  double total = 0;
  for (size_t s = 0; s < w.size(); ++s) {
    w[s] = weights.empty() ? static_cast<double>(source_sizes[s]) : weights[s];
    if (!std::isfinite(w[s]) || w[s] < 0) {
      return Status::InvalidArgument("source {} has weight {}: weights must be finite and >= 0", s,
                                     w[s]);
    }
    if (source_sizes[s] == 0) w[s] = 0;
    total += w[s];
  }
  if (!(total > 0)) {
    return Status::InvalidArgument("no source has both samples and a positive weight");
  }
  order.strides_.resize(w.size());
  order.shares_.resize(w.size());
  for (size_t s = 0; s < w.size(); ++s) {
    order.shares_[s] = w[s] / total;
    order.strides_[s] =
        w[s] > 0 ? std::max<uint64_t>(
                       1, static_cast<uint64_t>(std::llround(kStrideScale * total / w[s])))
                 : 0;
  }
  order.cursors_.resize(w.size());
  for (size_t s = 0; s < w.size(); ++s) order.cursors_[s].pass = order.strides_[s] / 2;
  order.Rebuild();
  return order;
}

void SampleOrder::Rebuild() {
  heap_.clear();
  permutations_.clear();
  permutation_epoch_.clear();
  for (uint32_t s = 0; s < sizes_.size(); ++s) {
    permutations_.emplace_back(0, 0);
    permutation_epoch_.push_back(UINT64_MAX);
    if (strides_[s] != 0) heap_.emplace_back(cursors_[s].pass, s);
  }
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
}

Permutation SampleOrder::EpochPermutation(uint32_t source, uint64_t epoch) const {
  return Permutation(sizes_[source], Mix64(seed_ ^ Mix64((uint64_t{source} << 40) ^ epoch)));
}

const Permutation& SampleOrder::PermutationOf(uint32_t source) {
  uint64_t epoch = cursors_[source].epoch;
  if (permutation_epoch_[source] != epoch) {
    permutations_[source] = EpochPermutation(source, epoch);
    permutation_epoch_[source] = epoch;
  }
  return permutations_[source];
}

bool SampleOrder::DrawnSince(std::span<const SourceCursor> since, const Draw& draw) const {
  const SourceCursor& start = since[draw.source];
  if (draw.epoch == start.epoch) return false;    // drawn since: positions [start, draw)
  if (draw.epoch > start.epoch + 1) return true;  // the whole epoch before was drawn since
  // The epoch before was drawn since from start.position on.
  return EpochPermutation(draw.source, start.epoch).Inverse(draw.index) >= start.position;
}

SampleOrder::Draw SampleOrder::Next() {
  const auto [pass, s] = heap_.front();
  SourceCursor& cursor = cursors_[s];
  Draw draw{s, PermutationOf(s).At(cursor.position), cursor.epoch, cursor.position};
  if (++cursor.position == sizes_[s]) {
    cursor.position = 0;
    ++cursor.epoch;
  }
  cursor.pass = pass + strides_[s];
  if (cursor.pass >= kPassRebase) {
    // Shift every pass down by the same amount: the order of the heap is unchanged.
    uint64_t floor = cursor.pass;
    for (size_t t = 0; t < cursors_.size(); ++t) {
      if (strides_[t] != 0) floor = std::min(floor, cursors_[t].pass);
    }
    for (size_t t = 0; t < cursors_.size(); ++t) {
      if (strides_[t] != 0) cursors_[t].pass -= floor;
    }
    Rebuild();
    return draw;
  }
  // The source goes back with its new pass: the top replaced and sifted down.
  const Entry back{cursor.pass, s};
  size_t i = 0;
  for (size_t child = 1; child < heap_.size(); child = 2 * i + 1) {
    if (child + 1 < heap_.size() && heap_[child + 1] < heap_[child]) ++child;
    if (!(heap_[child] < back)) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = back;
  return draw;
}

Status SampleOrder::Restore(std::span<const SourceCursor> cursors) {
  if (cursors.size() != sizes_.size()) {
    return Status::InvalidArgument("state has {} sources, the corpus {}", cursors.size(),
                                   sizes_.size());
  }
  for (size_t s = 0; s < cursors.size(); ++s) {
    if (sizes_[s] > 0 && cursors[s].position >= sizes_[s]) {
      return Status::InvalidArgument("state: source {} position {} is past its {} samples", s,
                                     cursors[s].position, sizes_[s]);
    }
  }
  cursors_.assign(cursors.begin(), cursors.end());
  Rebuild();
  return Status::OK();
}

}  // namespace mmpt::plan
