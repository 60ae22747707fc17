#include "mmpt/cp/vision_assign.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace mmpt::cp {
namespace {

constexpr VisionPolicy kPolicies[] = {VisionPolicy::kNaive, VisionPolicy::kCount,
                                      VisionPolicy::kCost};

struct RandomPack {
  std::vector<uint32_t> lengths;
  std::vector<CpImage> images;
};

// Samples of random length, each holding 0–3 images at random non-overlapping spans.
RandomPack MakeRandomPack(std::mt19937& rng) {
  RandomPack pack;
  std::uniform_int_distribution<int> samples(1, 8), images(0, 3);
  std::uniform_int_distribution<uint32_t> text(0, 300), image_tokens(1, 900);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  uint32_t at = 0;
  for (int s = samples(rng); s > 0; --s) {
    uint32_t length = 0;
    for (int i = images(rng); i > 0; --i) {
      length += text(rng);
      const uint32_t n = image_tokens(rng);
      // Quadratic-ish cost, so one large image outweighs several small ones.
      pack.images.push_back({at + length, n, n * (1.0 + n / 256.0) * jitter(rng)});
      length += n;
    }
    length += 1 + text(rng);
    pack.lengths.push_back(length);
    at += length;
  }
  return pack;
}

TEST(VisionAssignTest, ConsumedRowsFollowChunks) {
  // Two samples of 8 tokens, CP 2: chunks of 2 tokens, rank 0 holds [0,2) [6,8) [8,10) [14,16).
  // The image spans tokens [1, 5): row 0 at token 1 (rank 0), rows 1–3 at tokens 2–4 (rank 1,
  // locally 0–2: chunk 1 then chunk 2, which sit side by side on rank 1).
  const std::vector<uint32_t> lengths = {8, 8};
  const std::vector<CpImage> images = {{1, 4, 10.0}, {9, 6, 1.0}};
  auto split = SplitThd(lengths, {.cp = 2});
  ASSERT_TRUE(split.ok());
  auto naive = AssignVision(*split, images, VisionPolicy::kNaive);
  ASSERT_TRUE(naive.ok()) << naive.status().ToString();
  ASSERT_EQ(naive->consumed[1].size(), 2u);
  EXPECT_EQ(naive->consumed[1][0].image, 0u);
  EXPECT_EQ(naive->consumed[1][0].row_begin, 1u);
  EXPECT_EQ(naive->consumed[1][0].row_count, 3u);
  EXPECT_EQ(naive->consumed[1][0].local_offset, 0u);
  // Both images straddle the ranks, so naive encodes each twice.
  EXPECT_EQ(naive->encoders.values, (std::vector<uint32_t>{0, 1, 0, 1}));
  EXPECT_EQ(naive->encoders.begin, (std::vector<uint32_t>{0, 2, 4}));
  EXPECT_DOUBLE_EQ(naive->rank_cost[0], 11.0);
  EXPECT_DOUBLE_EQ(naive->rank_cost[1], 11.0);

  auto cost = AssignVision(*split, images, VisionPolicy::kCost);
  ASSERT_TRUE(cost.ok());
  EXPECT_DOUBLE_EQ(cost->max_cost(), 10.0);
  EXPECT_DOUBLE_EQ(cost->lower_bound, 10.0);
  // The big image goes to rank 1, which consumes 3 of its 4 rows (tie on load 0).
  ASSERT_EQ(cost->encoders[0].size(), 1u);
  EXPECT_EQ(cost->encoders[0][0], 1u);
  const auto sent = cost->RowsToSend(1, 0);
  ASSERT_FALSE(sent.empty());
  EXPECT_EQ(sent[0].image, 0u);
  EXPECT_EQ(sent[0].row_begin, 0u);
  EXPECT_EQ(sent[0].row_count, 1u);
}

TEST(VisionAssignTest, CountSplitsContiguousRunsAndCostBalances) {
  // Token order: one huge image first, then five small ones. Count gives rank 0 the huge one
  // and two small; cost gives the huge one a rank alone.
  std::vector<uint32_t> lengths = {4000};
  std::vector<CpImage> images = {{0, 1000, 100.0}};
  for (uint32_t i = 0; i < 5; ++i) images.push_back({1000 + i * 100, 50, 10.0});
  auto split = SplitThd(lengths, {.cp = 2});
  ASSERT_TRUE(split.ok());
  auto count = AssignVision(*split, images, VisionPolicy::kCount);
  auto cost = AssignVision(*split, images, VisionPolicy::kCost);
  ASSERT_TRUE(count.ok() && cost.ok());
  EXPECT_EQ(count->encoded[0], (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(count->encoded[1], (std::vector<uint32_t>{3, 4, 5}));
  EXPECT_DOUBLE_EQ(count->max_cost(), 120.0);
  EXPECT_DOUBLE_EQ(cost->max_cost(), 100.0);
  EXPECT_DOUBLE_EQ(cost->lower_bound, 100.0);
}

TEST(VisionAssignTest, RoutingCoversEveryRowOncePerConsumer) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t cp = 1 + trial % 5;
    RandomPack pack = MakeRandomPack(rng);
    auto split = SplitThd(pack.lengths, {.cp = cp});
    ASSERT_TRUE(split.ok());
    // Owner of every padded position.
    std::vector<int> owner(split->padded_tokens(), -1);
    for (uint32_t r = 0; r < cp; ++r) {
      for (uint32_t t : split->shards[r].token_indices) owner[t] = static_cast<int>(r);
    }
    for (VisionPolicy policy : kPolicies) {
      auto assignment = AssignVision(*split, pack.images, policy);
      ASSERT_TRUE(assignment.ok()) << assignment.status().ToString();
      std::vector<std::vector<int>> consumed_by(pack.images.size());
      for (size_t i = 0; i < pack.images.size(); ++i) {
        consumed_by[i].assign(pack.images[i].token_count, 0);
      }
      for (uint32_t r = 0; r < cp; ++r) {
        uint32_t last_offset = 0;
        for (const RowSegment& seg : assignment->consumed[r]) {
          EXPECT_GE(seg.local_offset, last_offset) << "rows out of local token order";
          last_offset = seg.local_offset + seg.row_count;
          const CpImage& image = pack.images[seg.image];
          const size_t seq = std::upper_bound(split->cu_seqlens.begin(), split->cu_seqlens.end(),
                                              image.token_start) -
                             split->cu_seqlens.begin() - 1;
          for (uint32_t j = 0; j < seg.row_count; ++j) {
            const uint32_t row = seg.row_begin + j;
            const uint32_t padded = split->PaddedPosition(seq, image.token_start + row);
            ASSERT_EQ(owner[padded], static_cast<int>(r));
            ASSERT_EQ(split->shards[r].token_indices[seg.local_offset + j], padded);
            ++consumed_by[seg.image][row];
          }
          const auto& encoders = assignment->encoders[seg.image];
          if (policy == VisionPolicy::kNaive) {
            EXPECT_EQ(seg.source_rank, r);
          } else {
            EXPECT_EQ(seg.source_rank, encoders[0]);
          }
          EXPECT_NE(std::find(encoders.begin(), encoders.end(), seg.source_rank), encoders.end());
        }
      }
      double total = 0, largest = 0;
      for (size_t i = 0; i < pack.images.size(); ++i) {
        for (int c : consumed_by[i]) {
          ASSERT_EQ(c, 1) << "image " << i;
        }
        if (policy != VisionPolicy::kNaive) {
          EXPECT_EQ(assignment->encoders[i].size(), 1u);
        }
        total += pack.images[i].vision_cost;
        largest = std::max(largest, pack.images[i].vision_cost);
      }
      ASSERT_EQ(assignment->encoded.size(), cp);
      if (policy == VisionPolicy::kCost) {
        // List scheduling never exceeds the mean plus the largest item.
        EXPECT_LE(assignment->max_cost(), total / cp + largest + 1e-9);
        EXPECT_GE(assignment->max_cost(), assignment->lower_bound - 1e-9);
      }
      if (policy == VisionPolicy::kCount) {
        for (uint32_t r = 0; r < cp; ++r) {
          const size_t n = assignment->encoded[r].size();
          EXPECT_LE(n, pack.images.size() / cp + 1);
          EXPECT_GE(n, pack.images.size() / cp);
        }
      }
    }
  }
}

TEST(VisionAssignTest, CostNeverWorseThanCountOnAverage) {
  std::mt19937 rng(9);
  double sum_count = 0, sum_cost = 0;
  for (int trial = 0; trial < 200; ++trial) {
    RandomPack pack = MakeRandomPack(rng);
    auto split = SplitThd(pack.lengths, {.cp = 2});
    ASSERT_TRUE(split.ok());
    auto count = AssignVision(*split, pack.images, VisionPolicy::kCount);
    auto cost = AssignVision(*split, pack.images, VisionPolicy::kCost);
    ASSERT_TRUE(count.ok() && cost.ok());
    sum_count += count->max_cost();
    sum_cost += cost->max_cost();
  }
  EXPECT_LT(sum_cost, sum_count);
}

// Two items of 3 and 2 rows over CP 2: rank 0 encodes item 0, rank 1 item 1; each consumes
// rows of both.
EncoderAssignment TwoRankRouting() {
  EncoderAssignment a;
  a.encoded = {{0}, {1}};
  a.consumed = {{{0, 0, 2, 0, 0}, {1, 0, 1, 5, 1}}, {{0, 2, 1, 1, 0}, {1, 1, 1, 3, 1}}};
  return a;
}

TEST(VisionAssignTest, RankExchangeListsWhatEachRankSendsAndGathers) {
  const std::vector<uint32_t> rows = {3, 2};
  auto zero = RankExchange(TwoRankRouting(), rows, 0);
  ASSERT_TRUE(zero.ok()) << zero.status().ToString();
  // Rank 0 sends item 0's row 2 to rank 1 and receives item 1's row 0 after its 3 local rows.
  EXPECT_EQ(zero->send_index, (std::vector<int32_t>{2}));
  EXPECT_EQ(zero->send_splits, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(zero->recv_splits, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(zero->gather_index, (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(zero->positions, (std::vector<int32_t>{0, 1, 5}));
  auto one = RankExchange(TwoRankRouting(), rows, 1);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->send_index, (std::vector<int32_t>{0}));
  EXPECT_EQ(one->gather_index, (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(one->positions, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(RankExchange(TwoRankRouting(), rows, 2).status().code(), StatusCode::kInvalidArgument);
  EncoderAssignment wrong = TwoRankRouting();
  wrong.consumed[0][1].source_rank = 0;  // rank 0 does not encode item 1
  EXPECT_EQ(RankExchange(wrong, rows, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST(VisionAssignTest, ValidateRoutingNamesEachFault) {
  const std::vector<uint32_t> rows = {3, 2};
  EXPECT_TRUE(ValidateRouting(TwoRankRouting(), rows).ok());
  auto fails = [&](auto change, std::vector<uint32_t> item_rows, const std::string& message) {
    EncoderAssignment a = TwoRankRouting();
    change(a);
    Status status = ValidateRouting(a, item_rows);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << message;
    EXPECT_NE(status.ToString().find(message), std::string::npos) << status.ToString();
  };
  fails([](EncoderAssignment& a) { a.encoded[1].clear(); }, rows,
        "source rank 1 does not encode it");
  fails([](EncoderAssignment& a) { a.encoded[0] = {0, 0}; }, rows, "not ascending");
  fails([](EncoderAssignment& a) { a.encoded[0] = {2}; }, rows, "encodes item 2 of 2");
  fails([](EncoderAssignment&) {}, {4, 2}, "item 0 has 4 rows but 3 are consumed");
  fails(
      [](EncoderAssignment& a) {
        a.consumed[0].push_back({1, 1, 1, 9, 1});
      },
      rows, "item 1 has 2 rows but 3");
  fails(
      [](EncoderAssignment& a) {
        a.consumed[1][1] = {1, 1, 5, 3, 1};
      },
      rows, "exceed its 2 rows");
  fails([](EncoderAssignment& a) { a.consumed[1][1].row_count = 0; }, rows, "are empty");
  fails(
      [](EncoderAssignment& a) {
        a.consumed[0][1] = {1, 0, 1, 1, 1};
      },
      rows, "offset 1 precedes the end 2");
  fails([](EncoderAssignment& a) { a.consumed[0][1].source_rank = 7; }, rows,
        "source rank 7 does not encode it");
  fails([](EncoderAssignment& a) { a.consumed[0][1].image = 5; }, rows, "consumes item 5 of 2");
  fails([](EncoderAssignment& a) { a.encoded.pop_back(); }, rows, "1 encoded lists and 2");
}

TEST(VisionAssignTest, CpOneKeepsEverythingLocal) {
  std::mt19937 rng(1);
  RandomPack pack = MakeRandomPack(rng);
  while (pack.images.empty()) pack = MakeRandomPack(rng);
  auto split = SplitThd(pack.lengths, {.cp = 1});
  ASSERT_TRUE(split.ok());
  for (VisionPolicy policy : kPolicies) {
    auto assignment = AssignVision(*split, pack.images, policy);
    ASSERT_TRUE(assignment.ok());
    EXPECT_EQ(assignment->encoded[0].size(), pack.images.size());
    EXPECT_EQ(assignment->consumed[0].size(), pack.images.size());  // one run per image
    for (const RowSegment& seg : assignment->consumed[0]) {
      EXPECT_EQ(seg.row_begin, 0u);
      EXPECT_EQ(seg.row_count, pack.images[seg.image].token_count);
      EXPECT_EQ(seg.source_rank, 0u);
    }
  }
}

TEST(VisionAssignTest, RanksWithoutImagesStillListed) {
  const std::vector<uint32_t> lengths = {64};
  const std::vector<CpImage> images = {{0, 4, 1.0}};
  auto split = SplitThd(lengths, {.cp = 4});
  ASSERT_TRUE(split.ok());
  auto assignment = AssignVision(*split, images, VisionPolicy::kCost);
  ASSERT_TRUE(assignment.ok());
  ASSERT_EQ(assignment->encoded.size(), 4u);
  ASSERT_EQ(assignment->consumed.size(), 4u);
  EXPECT_TRUE(assignment->encoded[3].empty());
  EXPECT_TRUE(assignment->consumed[3].empty());
}

TEST(VisionAssignTest, AnItemOfSeveralRunsIsOneUnitWithItsRowsInRunOrder) {
  // One sample of 16 tokens, CP 2: chunks of 4, rank 0 holds [0,4) [12,16), rank 1 [4,12).
  // Item 0 has runs [2, 4) and [6, 9) (rows 0–1 and 2–4) around item 1 at [4, 6); item 2 [12, 14).
  const std::vector<uint32_t> lengths = {16};
  std::vector<CpImage> items = {{2, 2, 5.0, {{6, 3}}}, {4, 2, 1.0}, {12, 2, 1.0}};
  EXPECT_EQ(Rows(items[0]), 5u);
  auto split = SplitThd(lengths, {.cp = 2});
  ASSERT_TRUE(split.ok());
  for (VisionPolicy policy : kPolicies) {
    auto assigned = AssignVision(*split, items, policy);
    ASSERT_TRUE(assigned.ok()) << assigned.status().ToString();
    // Every row of every item consumed once, at its token.
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> token_of;  // (item, row) → local token
    for (uint32_t r = 0; r < 2; ++r) {
      for (const RowSegment& s : assigned->consumed[r]) {
        for (uint32_t k = 0; k < s.row_count; ++k) {
          EXPECT_TRUE(
              token_of.insert({{s.image, s.row_begin + k}, r * 100 + s.local_offset + k}).second);
        }
      }
    }
    ASSERT_EQ(token_of.size(), 9u);
    // Item 0: rows 0–1 at tokens 2–3 (rank 0, local 2–3), rows 2–4 at tokens 6–8 (rank 1's
    // chunk 1 [4, 8) then chunk 2 [8, 12): local 2–4).
    EXPECT_EQ(token_of.at({0, 0}), 2u);
    EXPECT_EQ(token_of.at({0, 1}), 3u);
    EXPECT_EQ(token_of.at({0, 2}), 102u);
    EXPECT_EQ(token_of.at({0, 4}), 104u);
    // One encoder for the item, whichever the policy (the naive one encodes it on both ranks).
    EXPECT_EQ(assigned->encoders[0].size(), policy == VisionPolicy::kNaive ? 2u : 1u);
    auto exchange = RankExchange(*assigned, std::vector<uint32_t>{5, 2, 2}, 1);
    ASSERT_TRUE(exchange.ok()) << exchange.status().ToString();
  }
  items[0].more_runs = {{1, 1}};
  auto overlapping = AssignVision(*split, items, VisionPolicy::kCost);
  ASSERT_FALSE(overlapping.ok());
  EXPECT_NE(overlapping.status().message().find("not in token order"), std::string::npos);
  items[0].more_runs = {{14, 3}};
  EXPECT_NE(
      AssignVision(*split, items, VisionPolicy::kCost).status().message().find("past the pack"),
      std::string::npos);
  items[0].more_runs = {{5, 1}};
  EXPECT_NE(AssignVision(*split, items, VisionPolicy::kCost).status().message().find("overlap"),
            std::string::npos);
}

TEST(VisionAssignTest, RejectsBadImages) {
  const std::vector<uint32_t> lengths = {10, 10};
  auto split = SplitThd(lengths, {.cp = 2});
  ASSERT_TRUE(split.ok());
  auto check = [&](std::vector<CpImage> images, std::string_view needle) {
    auto result = AssignVision(*split, images, VisionPolicy::kCost);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(result.status().message().find(needle), std::string::npos)
        << result.status().message();
  };
  check({{0, 0, 1.0}}, "image 0 has no tokens");
  check({{8, 4, 1.0}}, "across the end of sample 0");
  check({{18, 4, 1.0}}, "past the pack");
  check({{0, 4, 1.0}, {3, 2, 1.0}}, "overlap");
  check({{0, 4, -1.0}}, "vision cost");
  EXPECT_EQ(ParseVisionPolicy("count").ValueOrDie(), VisionPolicy::kCount);
  EXPECT_FALSE(ParseVisionPolicy("random").ok());
}

}  // namespace
}  // namespace mmpt::cp
