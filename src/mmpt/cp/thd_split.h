#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::cp {

/// How a packed sequence is split over a context-parallel (CP) group.
struct ThdSplitOptions {
  uint32_t cp = 1;                 // ranks in the CP group
  uint32_t tp = 1;                 // tensor-parallel size; matters only with sequence_parallel
  bool sequence_parallel = false;  // Megatron sequence parallelism: pad to 2·TP·CP, not 2·CP
  bool with_token_indices = true;  // fill CpShard::token_indices (O(tokens)); the boundaries,
                                   // chunk arithmetic and valid counts are always there
};

/// Return the multiple every sub-sequence is padded to: 2·CP, or 2·TP·CP with sequence
/// parallelism. Errors: InvalidArgument for a zero cp or tp.
Result<uint32_t> PadMultiple(const ThdSplitOptions& options);

/// One CP rank's share of a packed sequence.
struct CpShard {
  /// Index into the padded packed sequence of every token this rank holds, in the order the
  /// rank holds them (its local THD layout): for each sub-sequence, chunk r then chunk 2c−1−r.
  std::vector<uint32_t> token_indices;
  /// Local THD boundaries of the sub-sequences: cu_seqlens_padded / cp.
  std::vector<uint32_t> cu_seqlens_padded_local;
  /// Real (non-padding) tokens of each sub-sequence on this rank. Padding sits at the end of a
  /// sub-sequence, so it lands in the last chunks: rank 0 (which holds the last chunk) carries
  /// the most of it.
  std::vector<uint32_t> valid_tokens;
};

/// The split of one packed sequence, as Transformer Engine's THD context parallelism takes it:
/// each sub-sequence padded to a multiple of PadMultiple(), cut into 2·CP equal chunks, CP rank
/// r keeping chunks r and 2·CP−1−r. Positions are token offsets (int32 in TE; uint32 here).
struct ThdSplit {
  uint32_t cp = 1;
  uint32_t pad_multiple = 2;
  /// Boundaries of the real tokens in the unpadded pack (`cu_seqlens` of TE), size n+1.
  std::vector<uint32_t> cu_seqlens;
  /// Boundaries of the padded sub-sequences (`cu_seqlens_padded` of TE), size n+1.
  std::vector<uint32_t> cu_seqlens_padded;
  /// One shard per CP rank, rank order.
  std::vector<CpShard> shards;

  /// Tokens in the padded pack.
  uint32_t padded_tokens() const { return cu_seqlens_padded.back(); }
  /// Tokens in each chunk of sub-sequence `seq` (its padded length / 2·CP).
  uint32_t chunk_tokens(size_t seq) const {
    return (cu_seqlens_padded[seq + 1] - cu_seqlens_padded[seq]) / (2 * cp);
  }
  /// Position in the padded pack of position `unpadded` of the unpadded pack, which lies in
  /// sub-sequence `seq`.
  uint32_t PaddedPosition(size_t seq, uint32_t unpadded) const {
    return unpadded - cu_seqlens[seq] + cu_seqlens_padded[seq];
  }
  /// CP rank that holds chunk `chunk` (0 ≤ chunk < 2·CP).
  uint32_t ChunkRank(uint32_t chunk) const { return chunk < cp ? chunk : 2 * cp - 1 - chunk; }
  /// Offset in its rank's local layout of the first token of chunk `chunk` of sub-sequence `seq`.
  uint32_t ChunkLocalStart(size_t seq, uint32_t chunk) const {
    return cu_seqlens_padded[seq] / cp + (chunk < cp ? 0 : chunk_tokens(seq));
  }
};

/// Split a pack whose sub-sequences have `seq_lengths` real tokens (in pack order), each padded
/// to PadMultiple() and then by its `extra_padding` (empty: none; else one per sub-sequence, each
/// a multiple of PadMultiple(): a plan's choice of where the chunk boundaries fall).
/// Errors: InvalidArgument for bad options, an empty pack or bad extra padding; OutOfRange when
/// the padded pack exceeds 2³¹−1 tokens (TE indexes with int32).
Result<ThdSplit> SplitThd(std::span<const uint32_t> seq_lengths, const ThdSplitOptions& options,
                          std::span<const uint32_t> extra_padding = {});

/// Return the token indices CP rank `cp_rank` of `cp` holds, from padded `cu_seqlens_padded`:
/// the semantics of Transformer Engine's `thd_get_partitioned_indices` (each boundary must be a
/// multiple of 2·cp). Errors: InvalidArgument when a boundary breaks that rule, the
/// boundaries decrease, or cp_rank ≥ cp.
Result<std::vector<uint32_t>> PartitionedIndices(std::span<const uint32_t> cu_seqlens_padded,
                                                 uint32_t cp, uint32_t cp_rank);

}  // namespace mmpt::cp
