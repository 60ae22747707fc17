#include "mmpt/cp/thd_split.h"

#include <algorithm>
#include <limits>

namespace mmpt::cp {

Result<uint32_t> PadMultiple(const ThdSplitOptions& options) {
  if (options.cp == 0) return Status::InvalidArgument("cp must be at least 1");
  if (options.tp == 0) return Status::InvalidArgument("tp must be at least 1");
  uint64_t multiple = 2ull * options.cp;
  if (options.sequence_parallel) multiple *= options.tp;
  if (multiple > (1u << 20)) {
    return Status::InvalidArgument("pad multiple 2·{}{} is implausibly large", options.cp,
                                   options.sequence_parallel ? "·TP" : "");
  }
  return static_cast<uint32_t>(multiple);
}

Result<std::vector<uint32_t>> PartitionedIndices(std::span<const uint32_t> cu_seqlens_padded,
                                                 uint32_t cp, uint32_t cp_rank) {
  if (cp == 0 || cp_rank >= cp) {
    return Status::InvalidArgument("CP rank {} is not in a CP group of {}", cp_rank, cp);
  }
  if (cu_seqlens_padded.size() < 2 || cu_seqlens_padded.front() != 0) {
    return Status::InvalidArgument("cu_seqlens_padded needs at least two entries, starting at 0");
  }
  const uint32_t chunks = 2 * cp;
  for (size_t i = 0; i < cu_seqlens_padded.size(); ++i) {
    if (cu_seqlens_padded[i] % chunks != 0) {
      return Status::InvalidArgument("cu_seqlens_padded[{}] = {} is not a multiple of 2·CP = {}", i,
                                     cu_seqlens_padded[i], chunks);
    }
    if (i > 0 && cu_seqlens_padded[i] < cu_seqlens_padded[i - 1]) {
      return Status::InvalidArgument("cu_seqlens_padded[{}] = {} is below the entry before it", i,
                                     cu_seqlens_padded[i]);
    }
  }
  std::vector<uint32_t> indices;
  indices.reserve(cu_seqlens_padded.back() / cp);
  for (size_t s = 0; s + 1 < cu_seqlens_padded.size(); ++s) {
    const uint32_t start = cu_seqlens_padded[s];
    const uint32_t chunk = (cu_seqlens_padded[s + 1] - start) / chunks;
    // Causal attention costs more late in a sequence; pairing chunk r with its mirror
    // 2c−1−r gives every rank the same attention work.
    for (uint32_t k : {cp_rank, chunks - 1 - cp_rank}) {
      for (uint32_t t = 0; t < chunk; ++t) indices.push_back(start + k * chunk + t);
    }
  }
  return indices;
}

Result<ThdSplit> SplitThd(std::span<const uint32_t> seq_lengths, const ThdSplitOptions& options,
                          std::span<const uint32_t> extra_padding) {
  MMPT_ASSIGN_OR_RETURN(uint32_t multiple, PadMultiple(options));
  if (seq_lengths.empty()) return Status::InvalidArgument("pack has no sub-sequences");
  if (!extra_padding.empty() && extra_padding.size() != seq_lengths.size()) {
    return Status::InvalidArgument("{} extra paddings for {} sub-sequences", extra_padding.size(),
                                   seq_lengths.size());
  }
  ThdSplit split;
  split.cp = options.cp;
  split.pad_multiple = multiple;
  split.cu_seqlens.reserve(seq_lengths.size() + 1);
  split.cu_seqlens_padded.reserve(seq_lengths.size() + 1);
  split.cu_seqlens.push_back(0);
  split.cu_seqlens_padded.push_back(0);
  uint64_t total = 0, total_padded = 0;
  for (size_t s = 0; s < seq_lengths.size(); ++s) {
    const uint32_t length = seq_lengths[s];
    const uint32_t extra = extra_padding.empty() ? 0 : extra_padding[s];
    if (extra % multiple != 0) {
      return Status::InvalidArgument("extra padding {} of sub-sequence {} is not a multiple of {}",
                                     extra, s, multiple);
    }
    total += length;
    total_padded += (uint64_t{length} + multiple - 1) / multiple * multiple + extra;
    if (total_padded > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      return Status::OutOfRange("padded pack of {}+ tokens exceeds TE's int32 token index",
                                total_padded);
    }
    split.cu_seqlens.push_back(static_cast<uint32_t>(total));
    split.cu_seqlens_padded.push_back(static_cast<uint32_t>(total_padded));
  }

  const uint32_t cp = options.cp;
  split.shards.resize(cp);
  for (uint32_t r = 0; r < cp; ++r) {
    CpShard& shard = split.shards[r];
    if (options.with_token_indices) {
      MMPT_ASSIGN_OR_RETURN(shard.token_indices,
                            PartitionedIndices(split.cu_seqlens_padded, cp, r));
    }
    shard.cu_seqlens_padded_local.reserve(split.cu_seqlens_padded.size());
    for (uint32_t boundary : split.cu_seqlens_padded) {
      shard.cu_seqlens_padded_local.push_back(boundary / cp);
    }
    shard.valid_tokens.reserve(seq_lengths.size());
    for (size_t s = 0; s < seq_lengths.size(); ++s) {
      const uint32_t chunk = split.chunk_tokens(s);
      uint32_t valid = 0;
      for (uint32_t k : {r, 2 * cp - 1 - r}) {
        // Real tokens of the sub-sequence occupy its first seq_lengths[s] padded positions.
        const uint64_t begin = uint64_t{k} * chunk, end = begin + chunk;
        if (seq_lengths[s] > begin) {
          valid += static_cast<uint32_t>(std::min<uint64_t>(end, seq_lengths[s]) - begin);
        }
      }
      shard.valid_tokens.push_back(valid);
    }
  }
  return split;
}

}  // namespace mmpt::cp
