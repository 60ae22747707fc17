#include "mmpt/pack/packer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "mmpt/pack/overlong.h"
#include "mmpt/pack/refill.h"
#include "mmpt/pack/streaming_packer.h"

namespace mmpt::pack {
namespace {

// A corpus like a pretraining mix: many short captions, some documents, a few long ones.
std::vector<PackItem> RandomItems(uint32_t seed, size_t n, uint32_t seq_len) {
  std::mt19937 rng(seed);
  std::vector<PackItem> items(n);
  for (auto& item : items) {
    uint32_t kind = rng() % 10;
    uint32_t hi = kind < 6 ? 600 : kind < 9 ? 3000 : seq_len;
    item.tokens = 1 + rng() % hi;
    item.images = rng() % 4;
  }
  return items;
}

// The placement order PackItems promises: tokens descending, ties by position.
std::vector<uint32_t> DecreasingOrder(std::span<const PackItem> items) {
  std::vector<uint32_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return items[a].tokens > items[b].tokens; });
  return order;
}

// Every item in exactly one pack; no pack over its limits; recorded sums right.
void ExpectValid(std::span<const PackItem> items, const Packing& packing,
                 const PackConstraints& c) {
  std::vector<int> seen(items.size(), 0);
  ASSERT_EQ(packing.pack_begin.size(), packing.num_packs() + 1);
  for (size_t p = 0; p < packing.num_packs(); ++p) {
    uint64_t tokens = 0, images = 0;
    auto pack = packing.Pack(p);
    ASSERT_FALSE(pack.empty());
    for (uint32_t i : pack) {
      ++seen[i];
      tokens += items[i].tokens;
      images += items[i].images;
    }
    EXPECT_EQ(tokens, packing.pack_tokens[p]);
    EXPECT_LE(tokens, c.seq_len);
    if (c.max_images) {
      EXPECT_LE(images, c.max_images);
    }
    if (c.max_samples) {
      EXPECT_LE(pack.size(), c.max_samples);
    }
  }
  for (size_t i = 0; i < items.size(); ++i) ASSERT_EQ(seen[i], 1) << "item " << i;
}

// Naive O(n · packs) first-fit decreasing: the reference the segment tree must match exactly.
std::vector<std::vector<uint32_t>> NaiveFfd(std::span<const PackItem> items,
                                            const PackConstraints& c) {
  std::vector<std::vector<uint32_t>> packs;
  std::vector<uint32_t> tokens, images;
  for (uint32_t i : DecreasingOrder(items)) {
    size_t b = 0;
    for (; b < packs.size(); ++b) {
      if (tokens[b] + items[i].tokens <= c.seq_len &&
          (!c.max_images || images[b] + items[i].images <= c.max_images) &&
          (!c.max_samples || packs[b].size() < c.max_samples)) {
        break;
      }
    }
    if (b == packs.size()) {
      packs.emplace_back();
      tokens.push_back(0);
      images.push_back(0);
    }
    packs[b].push_back(i);
    tokens[b] += items[i].tokens;
    images[b] += items[i].images;
  }
  return packs;
}

class PackPropertyTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(PackPropertyTest, FirstFitMatchesTheNaiveReferenceExactly) {
  for (PackConstraints c : {PackConstraints{4096, 0, 0}, PackConstraints{8192, 16, 5}}) {
    auto items = RandomItems(GetParam(), 3000, c.seq_len);
    auto packing = PackItems(items, c, Algorithm::kFirstFitDecreasing);
    ASSERT_TRUE(packing.ok());
    ExpectValid(items, *packing, c);
    auto reference = NaiveFfd(items, c);
    ASSERT_EQ(packing->num_packs(), reference.size());
    for (size_t p = 0; p < reference.size(); ++p) {
      auto pack = packing->Pack(p);
      EXPECT_EQ(std::vector<uint32_t>(pack.begin(), pack.end()), reference[p]) << "pack " << p;
    }
  }
}

TEST_P(PackPropertyTest, BestFitPicksTheTightestFeasiblePackEveryTime) {
  for (PackConstraints c : {PackConstraints{4096, 0, 0}, PackConstraints{8192, 12, 6}}) {
    auto items = RandomItems(GetParam() + 100, 3000, c.seq_len);
    auto packing = PackItems(items, c, Algorithm::kBestFitDecreasing);
    ASSERT_TRUE(packing.ok());
    ExpectValid(items, *packing, c);
    // Replay the placements in order and check each chose a minimal-room feasible pack.
    std::vector<uint32_t> bin_of(items.size());
    for (size_t p = 0; p < packing->num_packs(); ++p) {
      for (uint32_t i : packing->Pack(p)) bin_of[i] = static_cast<uint32_t>(p);
    }
    std::vector<int64_t> tokens(packing->num_packs(), -1), images(packing->num_packs(), 0),
        count(packing->num_packs(), 0);
    for (uint32_t i : DecreasingOrder(items)) {
      int64_t best_room = INT64_MAX;
      for (size_t b = 0; b < tokens.size(); ++b) {
        if (tokens[b] < 0) continue;  // not opened yet
        int64_t room = c.seq_len - tokens[b] - items[i].tokens;
        bool ok = room >= 0 && (!c.max_images || images[b] + items[i].images <= c.max_images) &&
                  (!c.max_samples || count[b] < c.max_samples);
        if (ok) best_room = std::min(best_room, room);
      }
      uint32_t b = bin_of[i];
      if (tokens[b] < 0) {
        EXPECT_EQ(best_room, INT64_MAX) << "item " << i << " opened a pack while one fitted";
        tokens[b] = 0;
      } else {
        EXPECT_EQ(c.seq_len - tokens[b] - items[i].tokens, best_room) << "item " << i;
      }
      tokens[b] += items[i].tokens;
      images[b] += items[i].images;
      ++count[b];
    }
  }
}

TEST_P(PackPropertyTest, PackingIsDeterministicAndNearTheLowerBound) {
  auto items = RandomItems(GetParam() + 7, 20000, 8192);
  for (Algorithm a : {Algorithm::kFirstFitDecreasing, Algorithm::kBestFitDecreasing}) {
    auto first = PackItems(items, {8192, 0, 0}, a);
    auto second = PackItems(items, {8192, 0, 0}, a);
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_EQ(first->items, second->items);
    EXPECT_EQ(first->pack_begin, second->pack_begin);
    PackStats stats = ComputeStats(*first, 8192);
    EXPECT_GE(stats.packs, stats.lower_bound_packs);
    EXPECT_LE(stats.packs, stats.lower_bound_packs + stats.lower_bound_packs / 100 + 2);
    EXPECT_GT(stats.efficiency, 0.98);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, PackPropertyTest, ::testing::Values(1u, 2u, 3u, 42u));

TEST(PackTest, ItemsThatCanNeverFitAreNamed) {
  std::vector<PackItem> items = {{10, 0}, {9000, 0}};
  auto r = PackItems(items, {8192, 0, 0});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("item 1"), std::string::npos);
  items = {{0, 0}};
  EXPECT_FALSE(PackItems(items, {8192, 0, 0}).ok());
  items = {{5, 9}};
  EXPECT_FALSE(PackItems(items, {8192, 0, 8}).ok());
  EXPECT_TRUE(PackItems({}, {8192, 0, 0}).ok());
}

TEST(PackTest, StatsCountEfficiencyAndLowerBound) {
  std::vector<PackItem> items = {{6, 0}, {5, 0}, {4, 0}, {3, 0}, {2, 0}};  // 20 tokens, len 10
  auto packing = PackItems(items, {10, 0, 0}, Algorithm::kFirstFitDecreasing);
  ASSERT_TRUE(packing.ok());
  PackStats stats = ComputeStats(*packing, 10);
  EXPECT_EQ(stats.tokens, 20u);
  EXPECT_EQ(stats.lower_bound_packs, 2u);
  EXPECT_EQ(stats.packs, 2u);  // FFD: {6, 4} and {5, 3, 2}
  EXPECT_DOUBLE_EQ(stats.efficiency, 1.0);
  items.push_back({1, 0});
  packing = PackItems(items, {10, 0, 0}, Algorithm::kFirstFitDecreasing);
  ASSERT_TRUE(packing.ok());
  stats = ComputeStats(*packing, 10);
  EXPECT_EQ(stats.lower_bound_packs, 3u);
  EXPECT_NEAR(stats.efficiency, 21.0 / 30.0, 1e-12);
}

TEST(OverlongTest, TruncateCutsTextDropKeepsCount) {
  Fitted fit = FitToLength(100, 50, 8192, OverlongPolicy::kTruncate);
  EXPECT_FALSE(fit.dropped || fit.truncated);
  EXPECT_EQ(fit.tokens, 150u);
  fit = FitToLength(9000, 500, 8192, OverlongPolicy::kTruncate);
  EXPECT_TRUE(fit.truncated);
  EXPECT_EQ(fit.tokens, 8192u);
  EXPECT_EQ(fit.text_tokens, 8192u - 500);
  fit = FitToLength(9000, 500, 8192, OverlongPolicy::kDrop);
  EXPECT_TRUE(fit.dropped);
  fit = FitToLength(10, 9000, 8192, OverlongPolicy::kTruncate);  // images cannot be cut
  EXPECT_TRUE(fit.dropped);
  EXPECT_FALSE(ParseOverlongPolicy("clip").ok());
}

TEST(StreamingPackerTest, EveryItemComesOutOnceAndCarryIsBounded) {
  auto items = RandomItems(5, 5000, 8192);
  StreamingPacker packer({8192, 0, 0}, 512, 0.98);
  std::vector<StreamingPacker::Pack> packs;
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_TRUE(packer.Push(i, items[i], &packs).ok());
    EXPECT_LT(packer.buffered(), 512u);
  }
  size_t before_flush = packs.size();
  ASSERT_TRUE(packer.Flush(&packs).ok());
  EXPECT_EQ(packer.buffered(), 0u);
  std::vector<int> seen(items.size(), 0);
  uint64_t tokens = 0;
  for (const auto& pack : packs) {
    uint64_t sum = 0;
    for (uint64_t id : pack.ids) {
      ++seen[id];
      sum += items[id].tokens;
    }
    EXPECT_EQ(sum, pack.tokens);
    EXPECT_LE(sum, 8192u);
    tokens += sum;
  }
  for (int s : seen) ASSERT_EQ(s, 1);
  uint64_t item_tokens = 0;
  for (const auto& item : items) item_tokens += item.tokens;
  EXPECT_EQ(tokens, item_tokens);  // nothing lost or counted twice
  EXPECT_GT(packer.carried_total(), 0u);
  // Packs emitted before the flush are the full ones (or forced by the carry bound).
  double emitted_tokens = 0;
  for (size_t p = 0; p < before_flush; ++p) emitted_tokens += packs[p].tokens;
  EXPECT_GT(emitted_tokens / (before_flush * 8192.0), 0.95);
  StreamingPacker strict({100, 0, 0}, 8);
  EXPECT_FALSE(strict.Push(0, {101, 0}, &packs).ok());
}

}  // namespace
}  // namespace mmpt::pack

namespace mmpt::pack {
namespace {

TEST(RefillTest, TightensPacksKeepsEveryItemOnceAndRespectsLocks) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    auto items = RandomItems(seed + 50, 4000, 8192);
    PackConstraints c{8192, 0, 6};
    for (auto& item : items) item.images = std::min(item.images, 6u);
    // Pack the first 3000 items; the last 1000 were never packed and are spare.
    auto packing = PackItems(std::span(items).first(3000), c, Algorithm::kFirstFitDecreasing);
    ASSERT_TRUE(packing.ok());
    std::vector<std::vector<uint32_t>> packs(packing->num_packs());
    for (size_t p = 0; p < packing->num_packs(); ++p) {
      auto pack = packing->Pack(p);
      packs[p].assign(pack.begin(), pack.end());
    }
    std::vector<uint32_t> spare;
    for (uint32_t i = 3000; i < items.size(); ++i) spare.push_back(i);
    std::vector<uint8_t> locked(items.size(), 0);
    for (size_t i = 0; i < items.size(); i += 7) locked[i] = 1;
    std::vector<std::vector<uint32_t>> before = packs;
    uint64_t tokens_before = 0;
    for (const auto& p : packs)
      for (uint32_t i : p) tokens_before += items[i].tokens;
    RefillStats stats = RefillFromSpare(items, c, locked, &packs, &spare);
    EXPECT_GT(stats.added + stats.swapped, 0u);
    std::vector<int> seen(items.size(), 0);
    uint64_t tokens_after = 0;
    for (size_t p = 0; p < packs.size(); ++p) {
      uint64_t tokens = 0, images = 0;
      for (uint32_t i : packs[p]) {
        ++seen[i];
        tokens += items[i].tokens;
        images += items[i].images;
      }
      EXPECT_LE(tokens, c.seq_len);
      EXPECT_LE(images, c.max_images);
      tokens_after += tokens;
      for (uint32_t i : before[p]) {
        if (locked[i]) {
          EXPECT_NE(std::find(packs[p].begin(), packs[p].end(), i), packs[p].end());
        }
      }
    }
    for (uint32_t i : spare) ++seen[i];
    for (int s : seen) ASSERT_EQ(s, 1);
    EXPECT_TRUE(std::is_sorted(spare.begin(), spare.end()));
    EXPECT_GT(tokens_after, tokens_before);
  }
}

}  // namespace
}  // namespace mmpt::pack
