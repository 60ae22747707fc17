#include "mmpt/cp/thd_split.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace mmpt::cp {
namespace {

// Transformer Engine's thd_partition_indices_kernel, token by token: local token t of a rank is
// looked up in cu_seqlens_padded / world_size; the first half of a sequence's local tokens
// come from chunk `rank`, the second half from chunk 2·world_size − 1 − rank.
std::vector<uint32_t> TeOracle(const std::vector<uint32_t>& cu_padded, uint32_t world_size,
                               uint32_t rank) {
  std::vector<uint32_t> local(cu_padded.size());
  for (size_t i = 0; i < cu_padded.size(); ++i) local[i] = cu_padded[i] / world_size;
  std::vector<uint32_t> out(cu_padded.back() / world_size);
  for (uint32_t token = 0; token < out.size(); ++token) {
    size_t seq = 0;
    while (local[seq + 1] <= token) ++seq;
    const uint32_t seq_len = local[seq + 1] - local[seq];
    uint32_t index = token - local[seq];
    const uint32_t offset = index < seq_len / 2 ? rank : (world_size - 1) * 2 - rank;
    index += local[seq] * world_size + seq_len / 2 * offset;
    out[token] = index;
  }
  return out;
}

std::vector<uint32_t> RandomLengths(std::mt19937& rng, size_t max_count, uint32_t max_length) {
  std::uniform_int_distribution<size_t> count(1, max_count);
  std::uniform_int_distribution<uint32_t> length(1, max_length);
  std::vector<uint32_t> lengths(count(rng));
  for (auto& l : lengths) l = length(rng);
  return lengths;
}

TEST(ThdSplitTest, MatchesTransformerEngineExample) {
  // cu_seqlens [0, 8, 16], CP 2, as in TE's documentation of thd_get_partitioned_indices.
  const std::vector<uint32_t> lengths = {8, 8};
  auto split = SplitThd(lengths, {.cp = 2});
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_EQ(split->shards[0].token_indices, (std::vector<uint32_t>{0, 1, 6, 7, 8, 9, 14, 15}));
  EXPECT_EQ(split->shards[1].token_indices, (std::vector<uint32_t>{2, 3, 4, 5, 10, 11, 12, 13}));
  EXPECT_EQ(split->cu_seqlens_padded, (std::vector<uint32_t>{0, 8, 16}));
  EXPECT_EQ(split->shards[1].cu_seqlens_padded_local, (std::vector<uint32_t>{0, 4, 8}));
}

TEST(ThdSplitTest, PadsEachSubSequenceToTwiceCp) {
  const std::vector<uint32_t> lengths = {5, 1, 12};
  auto split = SplitThd(lengths, {.cp = 2});
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->cu_seqlens, (std::vector<uint32_t>{0, 5, 6, 18}));
  EXPECT_EQ(split->cu_seqlens_padded, (std::vector<uint32_t>{0, 8, 12, 24}));
  // Sub-sequence 0 (8 padded, 5 real): chunks [0,2) [2,4) → r0, r1; [4,6) r1 holds token 4
  // only; [6,8) r0 is padding. So rank 0 has 2 real tokens, rank 1 has 3.
  EXPECT_EQ(split->shards[0].valid_tokens, (std::vector<uint32_t>{2, 1, 6}));
  EXPECT_EQ(split->shards[1].valid_tokens, (std::vector<uint32_t>{3, 0, 6}));
}

TEST(ThdSplitTest, SequenceParallelPadsToTwiceTpCp) {
  const std::vector<uint32_t> lengths = {5};
  auto plain = SplitThd(lengths, {.cp = 2, .tp = 4});
  auto sp = SplitThd(lengths, {.cp = 2, .tp = 4, .sequence_parallel = true});
  ASSERT_TRUE(plain.ok() && sp.ok());
  EXPECT_EQ(plain->padded_tokens(), 8u);
  EXPECT_EQ(sp->padded_tokens(), 16u);
  EXPECT_EQ(sp->pad_multiple, 16u);
}

TEST(ThdSplitTest, EqualsTransformerEngineOnRandomPacks) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t cp = 1 + trial % 8;
    const auto lengths = RandomLengths(rng, 12, 3000);
    auto split = SplitThd(lengths, {.cp = cp});
    ASSERT_TRUE(split.ok());
    for (uint32_t r = 0; r < cp; ++r) {
      ASSERT_EQ(split->shards[r].token_indices, TeOracle(split->cu_seqlens_padded, cp, r))
          << "trial " << trial << " cp " << cp << " rank " << r;
    }
  }
}

TEST(ThdSplitTest, ShardsArePermutationOfPaddedTokens) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t cp = 1 + trial % 6, tp = 1 + trial % 3;
    const auto lengths = RandomLengths(rng, 20, 500);
    auto split = SplitThd(lengths, {.cp = cp, .tp = tp, .sequence_parallel = true});
    ASSERT_TRUE(split.ok());
    std::vector<int> seen(split->padded_tokens(), 0);
    uint32_t valid = 0;
    for (const CpShard& shard : split->shards) {
      EXPECT_EQ(shard.token_indices.size(), split->padded_tokens() / cp);
      for (uint32_t t : shard.token_indices) {
        ASSERT_LT(t, seen.size());
        ++seen[t];
      }
      for (uint32_t v : shard.valid_tokens) valid += v;
    }
    for (size_t t = 0; t < seen.size(); ++t) ASSERT_EQ(seen[t], 1) << "token " << t;
    EXPECT_EQ(valid, split->cu_seqlens.back());
    for (size_t s = 0; s + 1 < split->cu_seqlens_padded.size(); ++s) {
      const uint32_t padded = split->cu_seqlens_padded[s + 1] - split->cu_seqlens_padded[s];
      EXPECT_EQ(padded % (2 * cp * tp), 0u);
      EXPECT_GE(padded, lengths[s]);
      EXPECT_LT(padded - lengths[s], 2 * cp * tp);
    }
  }
}

TEST(ThdSplitTest, EachRankHoldsChunksRAndMirror) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 100; ++trial) {
    const uint32_t cp = 2 + trial % 4;
    const auto lengths = RandomLengths(rng, 6, 200);
    auto split = SplitThd(lengths, {.cp = cp});
    ASSERT_TRUE(split.ok());
    for (uint32_t r = 0; r < cp; ++r) {
      const CpShard& shard = split->shards[r];
      size_t at = 0;
      for (size_t s = 0; s < lengths.size(); ++s) {
        const uint32_t chunk = split->chunk_tokens(s), start = split->cu_seqlens_padded[s];
        ASSERT_EQ(shard.cu_seqlens_padded_local[s], at);
        for (uint32_t k : {r, 2 * cp - 1 - r}) {
          EXPECT_EQ(split->ChunkRank(k), r);
          EXPECT_EQ(split->ChunkLocalStart(s, k), at);
          for (uint32_t t = 0; t < chunk; ++t) {
            ASSERT_EQ(shard.token_indices[at++], start + k * chunk + t);
          }
        }
      }
    }
  }
}

TEST(ThdSplitTest, BoundariesWithoutIndices) {
  const std::vector<uint32_t> lengths = {5, 1, 12};
  auto split = SplitThd(lengths, {.cp = 2, .with_token_indices = false});
  ASSERT_TRUE(split.ok());
  EXPECT_TRUE(split->shards[0].token_indices.empty());
  EXPECT_EQ(split->cu_seqlens_padded, (std::vector<uint32_t>{0, 8, 12, 24}));
  EXPECT_EQ(split->shards[1].valid_tokens, (std::vector<uint32_t>{3, 0, 6}));
}

TEST(ThdSplitTest, CpOneIsIdentity) {
  const std::vector<uint32_t> lengths = {3, 4, 9};
  auto split = SplitThd(lengths, {.cp = 1});
  ASSERT_TRUE(split.ok());
  ASSERT_EQ(split->shards.size(), 1u);
  const auto& indices = split->shards[0].token_indices;
  ASSERT_EQ(indices.size(), split->padded_tokens());
  for (uint32_t t = 0; t < indices.size(); ++t) EXPECT_EQ(indices[t], t);
  EXPECT_EQ(split->shards[0].cu_seqlens_padded_local, split->cu_seqlens_padded);
}

TEST(ThdSplitTest, RejectsBadInput) {
  const std::vector<uint32_t> lengths = {4};
  EXPECT_EQ(SplitThd(lengths, {.cp = 0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SplitThd({}, {.cp = 2}).status().code(), StatusCode::kInvalidArgument);
  const std::vector<uint32_t> huge = {1u << 31, 1u << 31};
  EXPECT_EQ(SplitThd(huge, {.cp = 2}).status().code(), StatusCode::kOutOfRange);
  const std::vector<uint32_t> odd = {0, 6};
  auto status = PartitionedIndices(odd, 2, 0).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("cu_seqlens_padded[1] = 6"), std::string::npos);
  const std::vector<uint32_t> ok = {0, 8};
  EXPECT_FALSE(PartitionedIndices(ok, 2, 2).ok());
}

TEST(ThdSplitTest, ExtraPaddingLengthensASubSequencesChunks) {
  // 5 tokens pad to 8 on CP 2; 4 more make 12: chunks of 3, the real tokens in the first 5.
  auto split = SplitThd(std::vector<uint32_t>{5, 3}, {.cp = 2}, std::vector<uint32_t>{4, 0});
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_EQ(split->cu_seqlens, (std::vector<uint32_t>{0, 5, 8}));
  EXPECT_EQ(split->cu_seqlens_padded, (std::vector<uint32_t>{0, 12, 16}));
  EXPECT_EQ(split->chunk_tokens(0), 3u);
  // Rank 0: chunks 0 [0, 3) and 3 [9, 12): 3 real tokens; rank 1: [3, 6) and [6, 9): 2.
  EXPECT_EQ(split->shards[0].valid_tokens[0], 3u);
  EXPECT_EQ(split->shards[1].valid_tokens[0], 2u);
  EXPECT_EQ(SplitThd(std::vector<uint32_t>{5}, {.cp = 2}, std::vector<uint32_t>{2}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      SplitThd(std::vector<uint32_t>{5, 3}, {.cp = 2}, std::vector<uint32_t>{4}).status().code(),
      StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmpt::cp
