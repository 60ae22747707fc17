#include "mmpt/pack/packer.h"

#include <algorithm>
#include <bit>

namespace mmpt::pack {
namespace {

constexpr uint32_t kNoBin = UINT32_MAX;

// Indices of `items` by tokens, largest first, ties by position: a counting sort, O(n + L).
// Items largest first (stable): their indices, and the items in that order, so the packer
// reads them one after another rather than from anywhere in `items`.
struct Sorted {
  std::vector<uint32_t> order;
  std::vector<PackItem> items;
};

Sorted SortDecreasing(std::span<const PackItem> items, uint32_t seq_len) {
  std::vector<uint32_t> start(size_t{seq_len} + 2, 0);
  for (const PackItem& item : items) ++start[seq_len - item.tokens + 1];
  for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
  Sorted out{std::vector<uint32_t>(items.size()), std::vector<PackItem>(items.size())};
  for (uint32_t i = 0; i < items.size(); ++i) {
    const uint32_t at = start[seq_len - items[i].tokens]++;
    out.order[at] = i;
    out.items[at] = items[i];
  }
  return out;
}

// Open packs: tokens, samples and images held so far.
struct Bins {
  std::vector<uint32_t> tokens, samples, images;
  uint32_t Open() {
    tokens.push_back(0);
    samples.push_back(0);
    images.push_back(0);
    return static_cast<uint32_t>(tokens.size() - 1);
  }
};

bool ImagesFit(const PackConstraints& c, const Bins& bins, uint32_t bin, const PackItem& item) {
  return c.max_images == 0 || bins.images[bin] + item.images <= c.max_images;
}

// First fit: a max segment tree over pack slots holding each slot's room; unopened slots hold
// seq_len, so the leftmost fit is an open pack when one fits and the next new pack otherwise.
class FirstFit {
 public:
  FirstFit(size_t max_bins, uint32_t seq_len)
      : leaves_(std::bit_ceil(std::max<size_t>(max_bins, 1))), tree_(2 * leaves_, seq_len) {}

  // Leftmost slot ≥ `from` with room ≥ `tokens`, or kNoBin.
  uint32_t Find(uint32_t tokens, uint32_t from) const { return Find(1, 0, leaves_, tokens, from); }

  void SetRoom(uint32_t slot, uint32_t room) {
    size_t node = leaves_ + slot;
    tree_[node] = room;
    for (node /= 2; node >= 1; node /= 2)
      tree_[node] = std::max(tree_[2 * node], tree_[2 * node + 1]);
  }

 private:
  uint32_t Find(size_t node, size_t lo, size_t hi, uint32_t tokens, uint32_t from) const {
    if (hi <= from || tree_[node] < tokens) return kNoBin;
    if (hi - lo == 1) return static_cast<uint32_t>(lo);
    size_t mid = (lo + hi) / 2;
    uint32_t left = Find(2 * node, lo, mid, tokens, from);
    return left != kNoBin ? left : Find(2 * node + 1, mid, hi, tokens, from);
  }

  size_t leaves_;
  std::vector<uint32_t> tree_;
};

// Best fit: open packs bucketed by room left; a two-level bitset finds the smallest room ≥ t.
class BestFit {
 public:
  explicit BestFit(uint32_t seq_len)
      : buckets_(size_t{seq_len} + 1),
        words_((size_t{seq_len} + 64) / 64, 0),
        summary_((words_.size() + 63) / 64, 0) {}

  void Insert(uint32_t bin, uint32_t room) {
    if (buckets_[room].empty()) SetBit(room, true);
    buckets_[room].push_back(bin);
  }
  void Erase(uint32_t room, size_t position) {
    auto& bucket = buckets_[room];
    bucket.erase(bucket.begin() + static_cast<ptrdiff_t>(position));
    if (bucket.empty()) SetBit(room, false);
  }
  const std::vector<uint32_t>& Bucket(uint32_t room) const { return buckets_[room]; }

  // Smallest non-empty room ≥ `from`, or kNoBin.
  uint32_t NextRoom(uint32_t from) const {
    if (from >= buckets_.size()) return kNoBin;
    size_t w = from / 64;
    uint64_t bits = words_[w] & (~uint64_t{0} << (from % 64));
    if (bits != 0) return static_cast<uint32_t>(w * 64 + std::countr_zero(bits));
    size_t s = (w + 1) / 64;
    if (s >= summary_.size()) return kNoBin;
    uint64_t sbits =
        summary_[s] & (((w + 1) % 64 == 0) ? ~uint64_t{0} : (~uint64_t{0} << ((w + 1) % 64)));
    while (sbits == 0) {
      if (++s >= summary_.size()) return kNoBin;
      sbits = summary_[s];
    }
    size_t word = s * 64 + std::countr_zero(sbits);
    return static_cast<uint32_t>(word * 64 + std::countr_zero(words_[word]));
  }

 private:
  void SetBit(uint32_t room, bool on) {
    size_t w = room / 64;
    if (on) {
      words_[w] |= uint64_t{1} << (room % 64);
      summary_[w / 64] |= uint64_t{1} << (w % 64);
    } else {
      words_[w] &= ~(uint64_t{1} << (room % 64));
      if (words_[w] == 0) summary_[w / 64] &= ~(uint64_t{1} << (w % 64));
    }
  }

  std::vector<std::vector<uint32_t>> buckets_;
  std::vector<uint64_t> words_;
  std::vector<uint64_t> summary_;
};

}  // namespace

std::string_view AlgorithmName(Algorithm algorithm) {
  return algorithm == Algorithm::kFirstFitDecreasing ? "ffd" : "bfd";
}

Result<Algorithm> ParseAlgorithm(std::string_view name) {
  if (name == "ffd") return Algorithm::kFirstFitDecreasing;
  if (name == "bfd") return Algorithm::kBestFitDecreasing;
  return Status::InvalidArgument("unknown packing algorithm '{}' (expected ffd or bfd)", name);
}

Status ValidateItems(std::span<const PackItem> items, const PackConstraints& c) {
  if (c.seq_len == 0) return Status::InvalidArgument("sequence length must be at least 1");
  if (items.size() >= kNoBin) return Status::InvalidArgument("too many items: {}", items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].tokens == 0) return Status::InvalidArgument("item {} has zero tokens", i);
    if (items[i].tokens > c.seq_len) {
      return Status::InvalidArgument("item {} has {} tokens, more than the sequence length {}", i,
                                     items[i].tokens, c.seq_len);
    }
    if (c.max_images != 0 && items[i].images > c.max_images) {
      return Status::InvalidArgument("item {} has {} images, more than the {} a pack may hold", i,
                                     items[i].images, c.max_images);
    }
  }
  return Status::OK();
}

Result<Packing> PackItems(std::span<const PackItem> items, const PackConstraints& c,
                          Algorithm algorithm) {
  MMPT_RETURN_IF_ERROR(ValidateItems(items, c));
  const Sorted sorted = SortDecreasing(items, c.seq_len);
  const std::vector<uint32_t>& order = sorted.order;
  std::vector<uint32_t> bin_at(items.size());  // the pack of order[k]
  Bins bins;
  auto place = [&](uint32_t bin, const PackItem& item) {
    bins.tokens[bin] += item.tokens;
    bins.samples[bin] += 1;
    bins.images[bin] += item.images;
  };
  auto full = [&](uint32_t bin) {
    return c.max_samples != 0 && bins.samples[bin] >= c.max_samples;
  };

  if (algorithm == Algorithm::kFirstFitDecreasing) {
    FirstFit tree(items.size(), c.seq_len);
    for (size_t k = 0; k < order.size(); ++k) {
      const PackItem& item = sorted.items[k];
      uint32_t bin = tree.Find(item.tokens, 0);
      while (bin < bins.tokens.size() && !ImagesFit(c, bins, bin, item)) {
        bin = tree.Find(item.tokens, bin + 1);
      }
      if (bin >= bins.tokens.size()) bin = bins.Open();  // the leftmost unopened slot
      place(bin, item);
      tree.SetRoom(bin, full(bin) ? 0 : c.seq_len - bins.tokens[bin]);
      bin_at[k] = bin;
    }
  } else {
    BestFit fit(c.seq_len);
    for (size_t k = 0; k < order.size(); ++k) {
      const PackItem& item = sorted.items[k];
      uint32_t bin = kNoBin;
      for (uint32_t room = fit.NextRoom(item.tokens); room != kNoBin && bin == kNoBin;
           room = fit.NextRoom(room + 1)) {
        const auto& bucket = fit.Bucket(room);
        // Newest pack in the bucket first; scan on only when images rule it out.
        for (size_t k = bucket.size(); k-- > 0;) {
          if (ImagesFit(c, bins, bucket[k], item)) {
            bin = bucket[k];
            fit.Erase(room, k);
            break;
          }
        }
      }
      if (bin == kNoBin) bin = bins.Open();
      place(bin, item);
      uint32_t room = c.seq_len - bins.tokens[bin];
      if (room > 0 && !full(bin)) fit.Insert(bin, room);
      bin_at[k] = bin;
    }
  }

  Packing packing;
  const size_t num_bins = bins.tokens.size();
  packing.pack_tokens = std::move(bins.tokens);
  packing.pack_begin.assign(num_bins + 1, 0);
  for (uint32_t b : bin_at) ++packing.pack_begin[b + 1];
  for (size_t b = 0; b < num_bins; ++b) packing.pack_begin[b + 1] += packing.pack_begin[b];
  std::vector<uint32_t> next(packing.pack_begin.begin(), packing.pack_begin.end() - 1);
  packing.items.resize(items.size());
  for (size_t k = 0; k < order.size(); ++k) {
    packing.items[next[bin_at[k]]++] = order[k];  // largest first within a pack
  }
  return packing;
}

PackStats ComputeStats(const Packing& packing, uint32_t seq_len) {
  PackStats stats;
  stats.packs = packing.num_packs();
  for (uint32_t t : packing.pack_tokens) stats.tokens += t;
  stats.lower_bound_packs = (stats.tokens + seq_len - 1) / seq_len;
  stats.efficiency = stats.packs == 0 ? 0.0
                                      : static_cast<double>(stats.tokens) /
                                            (static_cast<double>(stats.packs) * seq_len);
  return stats;
}

bool LargeItems(std::vector<uint32_t> tokens, uint32_t seq_len) {
  if (tokens.empty()) return false;
  auto middle = tokens.begin() + static_cast<ptrdiff_t>(tokens.size() / 2);
  std::nth_element(tokens.begin(), middle, tokens.end());
  return uint64_t{*middle} * kLargeItemFraction >= seq_len;
}

}  // namespace mmpt::pack
