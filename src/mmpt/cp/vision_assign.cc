#include "mmpt/cp/vision_assign.h"

#include <algorithm>
#include <numeric>

namespace mmpt::cp {
namespace {

// Sub-sequence holding unpadded position `position` (cu_seqlens is non-decreasing).
size_t SeqOf(const ThdSplit& split, uint32_t position) {
  auto it = std::upper_bound(split.cu_seqlens.begin(), split.cu_seqlens.end(), position);
  return static_cast<size_t>(it - split.cu_seqlens.begin()) - 1;
}

// Image indices ordered by first token.
std::vector<uint32_t> TokenOrder(std::span<const CpImage> images) {
  std::vector<uint32_t> order(images.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return images[a].token_start < images[b].token_start; });
  return order;
}

// The rows of every image each rank consumes: each run's padded span cut at chunk borders.
std::vector<std::vector<RowSegment>> ConsumedRows(const ThdSplit& split,
                                                  std::span<const CpImage> images) {
  std::vector<std::vector<RowSegment>> consumed(split.cp);
  for (auto& segments : consumed) segments.reserve(images.size());
  for (uint32_t i = 0; i < images.size(); ++i) {
    ForEachRun(images[i], [&](const TokenRun& run, uint32_t first_row) {
      const size_t seq = SeqOf(split, run.token_start);
      const uint32_t chunk = split.chunk_tokens(seq);
      const uint32_t begin =
          split.PaddedPosition(seq, run.token_start) - split.cu_seqlens_padded[seq];
      const uint32_t end = begin + run.token_count;
      for (uint32_t k = begin / chunk; k * chunk < end; ++k) {
        const uint32_t lo = std::max(begin, k * chunk), hi = std::min(end, (k + 1) * chunk);
        const uint32_t rank = split.ChunkRank(k);
        consumed[rank].push_back(RowSegment{i, first_row + lo - begin, hi - lo,
                                            split.ChunkLocalStart(seq, k) + (lo - k * chunk),
                                            rank});
      }
    });
  }
  for (auto& segments : consumed) {
    auto by_offset = [](const RowSegment& a, const RowSegment& b) {
      return a.local_offset < b.local_offset;
    };
    if (!std::is_sorted(segments.begin(), segments.end(), by_offset)) {
      std::sort(segments.begin(), segments.end(), by_offset);
    }
    // Chunks r and 2c−1−r of a sub-sequence sit side by side locally: an image crossing the
    // middle of its sample then continues in the same run (merged in place).
    size_t kept = 0;
    for (const RowSegment& segment : segments) {
      if (kept > 0) {
        RowSegment& last = segments[kept - 1];
        if (last.image == segment.image && last.row_begin + last.row_count == segment.row_begin &&
            last.local_offset + last.row_count == segment.local_offset) {
          last.row_count += segment.row_count;
          continue;
        }
      }
      segments[kept++] = segment;
    }
    segments.resize(kept);
  }
  return consumed;
}

}  // namespace

std::string_view VisionPolicyName(VisionPolicy policy) {
  switch (policy) {
    case VisionPolicy::kNaive: return "naive";
    case VisionPolicy::kCount: return "count";
    case VisionPolicy::kCost: return "cost";
  }
  return "?";
}

Result<VisionPolicy> ParseVisionPolicy(std::string_view name) {
  for (VisionPolicy p : {VisionPolicy::kNaive, VisionPolicy::kCount, VisionPolicy::kCost}) {
    if (VisionPolicyName(p) == name) return p;
  }
  return Status::InvalidArgument("unknown vision policy '{}' (naive, count, cost)", name);
}

double EncoderAssignment::max_cost() const {
  return rank_cost.empty() ? 0 : *std::max_element(rank_cost.begin(), rank_cost.end());
}

double EncoderAssignment::mean_cost() const {
  if (rank_cost.empty()) return 0;
  return std::accumulate(rank_cost.begin(), rank_cost.end(), 0.0) /
         static_cast<double>(rank_cost.size());
}

std::vector<RowSegment> EncoderAssignment::RowsToSend(uint32_t source, uint32_t dest) const {
  std::vector<RowSegment> rows;
  if (source == dest || dest >= consumed.size()) return rows;
  for (const RowSegment& segment : consumed[dest]) {
    if (segment.source_rank == source) rows.push_back(segment);
  }
  return rows;
}

Status ValidateRouting(const EncoderAssignment& assignment, std::span<const uint32_t> item_rows) {
  const size_t cp = assignment.consumed.size();
  if (cp == 0 || assignment.encoded.size() != cp) {
    return Status::InvalidArgument("routing: {} encoded lists and {} consumed lists",
                                   assignment.encoded.size(), cp);
  }
  const size_t items = item_rows.size();
  std::vector<std::vector<bool>> encodes(cp, std::vector<bool>(items, false));
  for (size_t rank = 0; rank < cp; ++rank) {
    const std::vector<uint32_t>& encoded = assignment.encoded[rank];
    for (size_t k = 0; k < encoded.size(); ++k) {
      if (encoded[k] >= items) {
        return Status::InvalidArgument("routing: rank {} encodes item {} of {}", rank, encoded[k],
                                       items);
      }
      if (k > 0 && encoded[k - 1] >= encoded[k]) {
        return Status::InvalidArgument("routing: rank {}'s encoded items are not ascending", rank);
      }
      encodes[rank][encoded[k]] = true;
    }
  }
  std::vector<uint64_t> covered(items, 0);
  for (size_t rank = 0; rank < cp; ++rank) {
    uint64_t end = 0;
    for (const RowSegment& s : assignment.consumed[rank]) {
      if (s.image >= items) {
        return Status::InvalidArgument("routing: rank {} consumes item {} of {}", rank, s.image,
                                       items);
      }
      const uint64_t row_end = uint64_t{s.row_begin} + s.row_count;
      if (s.row_count == 0 || row_end > item_rows[s.image]) {
        return Status::InvalidArgument(
            "routing: rank {}, a segment of item {}: rows [{}, {}) are empty or exceed its {} rows",
            rank, s.image, s.row_begin, row_end, item_rows[s.image]);
      }
      if (s.source_rank >= cp || !encodes[s.source_rank][s.image]) {
        return Status::InvalidArgument(
            "routing: rank {}, a segment of item {}: source rank {} does not encode it", rank,
            s.image, s.source_rank);
      }
      if (s.local_offset < end) {
        return Status::InvalidArgument(
            "routing: rank {}, a segment of item {}: local offset {} precedes the end {} of the "
            "previous segment (segments go in local order)",
            rank, s.image, s.local_offset, end);
      }
      end = uint64_t{s.local_offset} + s.row_count;
      covered[s.image] += s.row_count;
    }
  }
  for (size_t item = 0; item < items; ++item) {
    if (covered[item] != item_rows[item]) {
      return Status::InvalidArgument(
          "routing: item {} has {} rows but {} are consumed (each row exactly once)", item,
          item_rows[item], covered[item]);
    }
  }
  return Status::OK();
}

Result<ExchangeIndices> RankExchange(const EncoderAssignment& assignment,
                                     std::span<const uint32_t> item_rows, uint32_t rank) {
  MMPT_RETURN_IF_ERROR(ValidateRouting(assignment, item_rows));
  const uint32_t cp = static_cast<uint32_t>(assignment.consumed.size());
  if (rank >= cp) {
    return Status::InvalidArgument("exchange: rank {} is not in a CP group of {}", rank, cp);
  }
  // Where each item this rank encodes starts in its local embeddings.
  std::vector<int32_t> start(item_rows.size(), -1);
  int32_t local_rows = 0;
  for (uint32_t item : assignment.encoded[rank]) {
    start[item] = local_rows;
    local_rows += static_cast<int32_t>(item_rows[item]);
  }
  // A segment this rank sources: the routing is valid, so the rank encodes its item.
  auto local_row = [&](const RowSegment& segment) {
    return start[segment.image] + static_cast<int32_t>(segment.row_begin);
  };
  ExchangeIndices out;
  out.send_splits.assign(cp, 0);
  out.recv_splits.assign(cp, 0);
  for (uint32_t dest = 0; dest < cp; ++dest) {
    for (const RowSegment& segment : assignment.RowsToSend(rank, dest)) {
      const int32_t first = local_row(segment);
      for (uint32_t i = 0; i < segment.row_count; ++i) out.send_index.push_back(first + i);
      out.send_splits[dest] += static_cast<int32_t>(segment.row_count);
    }
  }
  for (const RowSegment& segment : assignment.consumed[rank]) {
    if (segment.source_rank != rank) {
      out.recv_splits[segment.source_rank] += static_cast<int32_t>(segment.row_count);
    }
  }
  // Received rows follow the local ones, by source rank, each source's in this rank's order.
  std::vector<int32_t> received_at(cp, local_rows);
  for (uint32_t source = 1; source < cp; ++source) {
    received_at[source] = received_at[source - 1] + out.recv_splits[source - 1];
  }
  for (const RowSegment& segment : assignment.consumed[rank]) {
    int32_t first = 0;
    if (segment.source_rank == rank) {
      first = local_row(segment);
    } else {
      first = received_at[segment.source_rank];
      received_at[segment.source_rank] += static_cast<int32_t>(segment.row_count);
    }
    for (uint32_t i = 0; i < segment.row_count; ++i) {
      out.gather_index.push_back(first + static_cast<int32_t>(i));
      out.positions.push_back(static_cast<int32_t>(segment.local_offset + i));
    }
  }
  return out;
}

Status ValidateImages(const ThdSplit& split, std::span<const CpImage> images) {
  const uint32_t total = split.cu_seqlens.back();
  std::vector<std::pair<TokenRun, size_t>> runs;  // every item's, with its item
  runs.reserve(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    const CpImage& image = images[i];
    if (image.token_count == 0) return Status::InvalidArgument("image {} has no tokens", i);
    if (!(image.vision_cost >= 0)) {
      return Status::InvalidArgument("image {} has vision cost {}", i, image.vision_cost);
    }
    const size_t seq = image.token_start < total ? SeqOf(split, image.token_start) : 0;
    Status status;
    ForEachRun(image, [&](const TokenRun& run, uint32_t) {
      const uint64_t end = uint64_t{run.token_start} + run.token_count;
      if (!status.ok()) return;
      if (run.token_count == 0) {
        status =
            Status::InvalidArgument("image {} has a run of no tokens at {}", i, run.token_start);
      } else if (end > total) {
        status = Status::InvalidArgument("image {} spans tokens [{}, {}) past the pack's {} tokens",
                                         i, run.token_start, end, total);
      } else if (end > split.cu_seqlens[seq + 1]) {
        status = Status::InvalidArgument(
            "image {} spans tokens [{}, {}) across the end of sample "
            "{} at {}",
            i, run.token_start, end, seq, split.cu_seqlens[seq + 1]);
      } else if (!runs.empty() && runs.back().second == i &&
                 runs.back().first.token_start >= run.token_start) {
        status = Status::InvalidArgument("image {}'s runs are not in token order at {}", i,
                                         run.token_start);
      }
      runs.push_back({run, i});
    });
    MMPT_RETURN_IF_ERROR(status);
  }
  auto by_start = [](const auto& a, const auto& b) {
    return a.first.token_start < b.first.token_start;
  };
  if (!std::is_sorted(runs.begin(), runs.end(), by_start)) {
    std::sort(runs.begin(), runs.end(), by_start);
  }
  for (size_t j = 1; j < runs.size(); ++j) {
    const TokenRun& prev = runs[j - 1].first;
    if (prev.token_start + prev.token_count > runs[j].first.token_start) {
      return Status::InvalidArgument("images {} and {} overlap at token {}", runs[j - 1].second,
                                     runs[j].second, runs[j].first.token_start);
    }
  }
  return Status::OK();
}

Result<EncoderAssignment> AssignVision(const ThdSplit& split, std::span<const CpImage> images,
                                       VisionPolicy policy) {
  MMPT_RETURN_IF_ERROR(ValidateImages(split, images));
  const uint32_t cp = split.cp;
  EncoderAssignment out;
  out.policy = policy;
  out.encoded.resize(cp);
  out.rank_cost.assign(cp, 0.0);
  out.consumed = ConsumedRows(split, images);

  // Rows of image i each rank consumes (flat: image-major), for the naive policy and the cost
  // policy's ties.
  std::vector<uint32_t> rows_on(images.size() * size_t{cp}, 0);
  auto rows = [&](uint32_t i, uint32_t r) -> uint32_t& { return rows_on[size_t{i} * cp + r]; };
  for (uint32_t r = 0; r < cp; ++r) {
    for (const RowSegment& segment : out.consumed[r]) rows(segment.image, r) += segment.row_count;
  }

  double total = 0, largest = 0;
  for (const CpImage& image : images) {
    total += image.vision_cost;
    largest = std::max(largest, image.vision_cost);
  }
  out.lower_bound = std::max(total / cp, largest);

  // One rank encodes everything under every policy: skip the orderings (plans at CP 1 run this
  // for every pack of every step).
  const VisionPolicy effective = cp == 1 ? VisionPolicy::kNaive : policy;
  // Under vision DP, each image's one encoder.
  std::vector<uint32_t> encoder(effective == VisionPolicy::kNaive ? 0 : images.size());
  switch (effective) {
    case VisionPolicy::kNaive:
      out.encoders.begin.reserve(images.size() + 1);
      out.encoders.values.reserve(images.size());
      for (uint32_t i = 0; i < images.size(); ++i) {
        for (uint32_t r = 0; r < cp; ++r) {
          if (rows(i, r) > 0) out.encoders.values.push_back(r);
        }
        out.encoders.begin.push_back(static_cast<uint32_t>(out.encoders.values.size()));
      }
      break;
    case VisionPolicy::kCount: {
      const std::vector<uint32_t> order = TokenOrder(images);
      const size_t n = order.size(), base = n / cp, extra = n % cp;
      size_t next = 0;
      for (uint32_t r = 0; r < cp; ++r) {
        const size_t run = base + (r < extra ? 1 : 0);
        for (size_t j = 0; j < run; ++j) encoder[order[next++]] = r;
      }
      break;
    }
    case VisionPolicy::kCost: {
      std::vector<uint32_t> order = TokenOrder(images);
      std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return images[a].vision_cost > images[b].vision_cost;
      });
      std::vector<double> load(cp, 0.0);
      for (uint32_t i : order) {
        uint32_t best = 0;
        for (uint32_t r = 1; r < cp; ++r) {
          if (load[r] < load[best] || (load[r] == load[best] && rows(i, r) > rows(i, best))) {
            best = r;
          }
        }
        load[best] += images[i].vision_cost;
        encoder[i] = best;
      }
      break;
    }
  }
  if (effective != VisionPolicy::kNaive) {
    out.encoders.values = std::move(encoder);
    out.encoders.begin.resize(images.size() + 1);
    std::iota(out.encoders.begin.begin(), out.encoders.begin.end(), 0u);
  }

  for (uint32_t i = 0; i < images.size(); ++i) {
    for (uint32_t r : out.encoders[i]) {
      out.encoded[r].push_back(i);
      out.rank_cost[r] += images[i].vision_cost;
    }
  }
  // Under vision DP every row comes from the image's one encoder; under naive from the consumer.
  if (policy != VisionPolicy::kNaive) {
    for (auto& segments : out.consumed) {
      for (RowSegment& segment : segments) segment.source_rank = out.encoders[segment.image][0];
    }
  }
  return out;
}

}  // namespace mmpt::cp
