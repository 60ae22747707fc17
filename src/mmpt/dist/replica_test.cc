#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <string_view>

#include "mmpt/dist/batch_wire.h"
#include "mmpt/dist/replica.h"

namespace mmpt::dist {

using namespace load;  // the loader and the Batch this module carries between ranks
namespace {

plan::Layout Grid(uint32_t dp, uint32_t cp, uint32_t tp, uint32_t pp) {
  plan::Layout layout;
  layout.dp = dp;
  layout.cp = cp;
  layout.tp = tp;
  layout.pp = pp;
  return layout;
}

TEST(RankGrid, MegatronOrderPutsTpFastestAndPpSlowest) {
  auto grid = RankGrid::Create(Grid(2, 1, 2, 2));
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->world_size(), 8u);
  // rank = tp + 2·(dp + 2·pp)
  EXPECT_EQ(*grid->Place(0), (RankPlace{0, 0, 0, 0, 0, StageRole::kFirst}));
  EXPECT_EQ(*grid->Place(1), (RankPlace{1, 0, 0, 1, 0, StageRole::kFirst}));
  EXPECT_EQ(*grid->Place(2), (RankPlace{2, 1, 0, 0, 0, StageRole::kFirst}));
  EXPECT_EQ(*grid->Place(7), (RankPlace{7, 1, 0, 1, 1, StageRole::kLast}));
  EXPECT_EQ(grid->Replica(1, 0), (std::vector<uint32_t>{2, 3, 6, 7}));
  EXPECT_EQ(grid->Place(8).status().code(), StatusCode::kInvalidArgument);
  // Every rank is in exactly one replica, and its place round-trips.
  std::set<uint32_t> seen;
  for (uint32_t dp = 0; dp < 2; ++dp) {
    for (uint32_t rank : grid->Replica(dp, 0)) {
      EXPECT_TRUE(seen.insert(rank).second);
      const RankPlace place = *grid->Place(rank);
      EXPECT_EQ(place.dp, dp);
      EXPECT_EQ(grid->RankAt(place.dp, place.cp, place.tp, place.pp), rank);
    }
  }
  EXPECT_EQ(seen.size(), 8u);
}

TEST(RankGrid, ReplicaShareBroadcastsOncePerNodeAndRingsWithinOne) {
  // dp 2 × tp 2 × pp 2 on two nodes of four: each replica's first stage on node a, its last on
  // node b.
  auto grid = RankGrid::Create(Grid(2, 1, 2, 2));
  ASSERT_TRUE(grid.ok());
  const std::vector<std::string> nodes = {"a", "a", "a", "a", "b", "b", "b", "b"};
  const std::vector<BroadcastGroup> groups = {{{0, 4}, FieldsOf(StageRole::kLast)},
                                              {{2, 6}, FieldsOf(StageRole::kLast)}};
  auto loading = PlanReplicaShare(*grid, nodes, 0);
  ASSERT_TRUE(loading.ok()) << loading.status().ToString();
  EXPECT_EQ(loading->groups, groups);
  EXPECT_EQ(loading->loading_rank, 0u);
  EXPECT_EQ(loading->sends, (std::vector<size_t>{0}));
  EXPECT_EQ(loading->source, -1);
  EXPECT_EQ(loading->ring_writer, 0u);
  EXPECT_EQ(loading->ring_readers, (std::vector<uint32_t>{1}));
  EXPECT_EQ(loading->ring_fields, FieldsOf(StageRole::kFirst));
  auto receiving = PlanReplicaShare(*grid, nodes, 4);
  ASSERT_TRUE(receiving.ok());
  EXPECT_EQ(receiving->groups, groups);  // every rank creates the same groups
  EXPECT_TRUE(receiving->sends.empty());
  EXPECT_EQ(receiving->source, 0);
  EXPECT_EQ(receiving->ring_writer, 4u);
  EXPECT_EQ(receiving->ring_readers, (std::vector<uint32_t>{5}));
  EXPECT_EQ(receiving->ring_fields, FieldsOf(StageRole::kLast));
  auto reader = PlanReplicaShare(*grid, nodes, 7);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(reader->loading_rank, 2u);
  EXPECT_EQ(reader->source, -1);
  EXPECT_EQ(reader->ring_writer, 6u);
  // One node: no broadcast at all, one ring per replica.
  const std::vector<std::string> one(8, "a");
  auto local = PlanReplicaShare(*grid, one, 3);
  ASSERT_TRUE(local.ok());
  EXPECT_TRUE(local->groups.empty());
  EXPECT_EQ(local->ring_writer, 2u);
  EXPECT_EQ(local->ring_readers, (std::vector<uint32_t>{3, 6, 7}));
  EXPECT_EQ(PlanReplicaShare(*grid, one, 8).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanReplicaShare(*grid, std::vector<std::string>(3, "a"), 0).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(RankGrid, OtherOrdersAndStageRoles) {
  auto order = ParseRankOrder("tp-cp-ep-dp-pp");
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(RankOrderName(*order), "tp-cp-dp-pp");
  auto pp_first = ParseRankOrder("pp-tp-dp-cp");
  ASSERT_TRUE(pp_first.ok());
  auto grid = RankGrid::Create(Grid(1, 2, 1, 3), *pp_first);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->Place(1)->role, StageRole::kMiddle);
  EXPECT_EQ(grid->Place(2)->role, StageRole::kLast);
  EXPECT_EQ(grid->Place(3)->cp, 1u);
  EXPECT_EQ(grid->Replica(0, 1), (std::vector<uint32_t>{3, 4, 5}));
  // Each (d, c)'s loading rank at d · cp + c: its replica's first.
  EXPECT_EQ(grid->LoadingRanks(), (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(RankGrid::Create(Grid(1, 1, 1, 1))->Place(0)->role, StageRole::kOnly);
  EXPECT_FALSE(ParseRankOrder("tp-dp-pp").ok());
  EXPECT_FALSE(ParseRankOrder("tp-tp-dp-pp").ok());
  EXPECT_EQ(FieldsOf(StageRole::kMiddle), kShapeFields);
  EXPECT_EQ(FieldsOf(StageRole::kLast) & kTokenField, 0u);
  EXPECT_EQ(FieldsOf(StageRole::kFirst) & kLabelField, 0u);
}

Batch SampleBatch() {
  Batch b;
  b.step = 9;
  b.micro_step = 2;
  b.dp_rank = 1;
  b.cp_rank = 1;
  b.cp = 2;
  b.plan_hash = 0x1234'5678'9abc'def0;
  b.plan_dropped = 3;
  b.tokens = {5, 6, 7, 8};
  b.labels = {6, 7, -100, -100};
  b.loss_mask = {1, 1, 0, 0};
  b.position_ids = {0, 1, 2, 3, 0, 1, 1, 3, 0, 1, 1, 3};
  b.position_rows = 3;
  b.cu_seqlens = {0, 3, 8};
  b.cu_seqlens_padded = {0, 4, 8};
  b.max_seqlen = 4;
  b.pad_multiple = 4;
  b.patch_dim = 2;
  b.pixel_values = {0.5f, 1.5f, 2.5f, 3.5f};
  b.image_grid_thw = {1, 1, 2};
  b.encoded_images = {0};
  b.pixel_values_videos = {4.5f, 5.5f, 6.5f, 7.5f};
  b.video_grid_thw = {2, 1, 1};
  b.second_per_grid_ts = {1.25f};
  b.encoded_videos = {1};
  b.image_rows = {1, 1};
  b.image_encoder = {1, 1};
  b.routes = {{0, 0, 0, 1, 2, 1}, {0, 1, 0, 1, 3, 1}};
  // Wire values only (cp::RankExchange's own test checks what they mean).
  b.exchange_send_index = {0, 1};
  b.exchange_splits = {0, 2, 0, 0};
  b.exchange_gather_index = {0, 1};
  b.exchange_positions = {2, 3};
  b.mel_bins = 2;
  b.feature_frames = 3;
  b.input_features = {-0.5f, 0.25f, 0.75f, 1.0f, 0.0f, 0.0f};
  b.feature_attention_mask = {1, 1, 0};
  b.encoded_audios = {0};
  b.audio_rows = {1};
  b.audio_encoder = {1};
  b.audio_routes = {{0, 0, 0, 1, 1, 1}};
  b.audio_exchange_send_index = {0};
  b.audio_exchange_splits = {0, 1, 0, 0};
  b.audio_exchange_gather_index = {0};
  b.audio_exchange_positions = {1};
  b.sample_source = {0, 1};
  b.sample_index = {11, 1ull << 40};
  b.dropped = {{1, 77, 0, "Corrupt: coco/00000.zip: img.jpg: bad CRC"}};
  return b;
}

std::vector<std::byte> Encode(const Batch& batch, uint32_t fields) {
  const BatchView view = ViewOf(batch);
  std::vector<std::byte> bytes(EncodedSize(view, fields));
  EncodeBatch(view, fields, bytes);
  return bytes;
}

template <typename T>
std::vector<T> Vec(std::span<const T> s) {
  return {s.begin(), s.end()};
}

TEST(BatchWire, EveryFieldRoundTrips) {
  const Batch b = SampleBatch();
  const std::vector<std::byte> bytes = Encode(b, kAllFields);
  auto v = DecodeBatch(bytes);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->fields, kAllFields);
  EXPECT_EQ(v->scalars.step, 9u);
  EXPECT_EQ(v->scalars.micro_step, 2u);
  EXPECT_EQ(v->scalars.cp, 2u);
  EXPECT_EQ(v->scalars.plan_hash, b.plan_hash);
  EXPECT_EQ(v->scalars.num_tokens, 4u);
  EXPECT_EQ(Vec(v->tokens), b.tokens);
  EXPECT_EQ(Vec(v->labels), b.labels);
  EXPECT_EQ(Vec(v->loss_mask), b.loss_mask);
  EXPECT_EQ(Vec(v->position_ids), b.position_ids);
  EXPECT_EQ(Vec(v->cu_seqlens_padded), b.cu_seqlens_padded);
  EXPECT_EQ(Vec(v->pixel_values), b.pixel_values);
  EXPECT_EQ(Vec(v->pixel_values_videos), b.pixel_values_videos);
  EXPECT_EQ(Vec(v->video_grid_thw), b.video_grid_thw);
  EXPECT_EQ(Vec(v->second_per_grid_ts), b.second_per_grid_ts);
  EXPECT_EQ(Vec(v->encoded_videos), b.encoded_videos);
  EXPECT_EQ(Vec(v->routes), b.routes);
  EXPECT_EQ(v->scalars.mel_bins, 2u);
  EXPECT_EQ(v->scalars.feature_frames, 3u);
  EXPECT_EQ(Vec(v->input_features), b.input_features);
  EXPECT_EQ(Vec(v->feature_attention_mask), b.feature_attention_mask);
  EXPECT_EQ(Vec(v->encoded_audios), b.encoded_audios);
  EXPECT_EQ(Vec(v->audio_rows), b.audio_rows);
  EXPECT_EQ(Vec(v->audio_encoder), b.audio_encoder);
  EXPECT_EQ(Vec(v->audio_routes), b.audio_routes);
  EXPECT_EQ(Vec(v->sample_index), b.sample_index);
  ASSERT_EQ(v->dropped.size(), 1u);
  EXPECT_EQ(v->dropped[0].index, 77u);
  EXPECT_EQ(v->dropped[0].reason, b.dropped[0].reason);
  // The arrays are views into the bytes, not copies.
  EXPECT_GE(reinterpret_cast<const std::byte*>(v->tokens.data()), bytes.data());
  EXPECT_LT(reinterpret_cast<const std::byte*>(v->tokens.data()), bytes.data() + bytes.size());
}

// The field table drives the wire: every row round-trips, holds data in SampleBatch (a row
// added without sample data fails here), and Batch::size_bytes counts every row.
TEST(BatchWire, EveryRowOfTheFieldTableRoundTrips) {
  const Batch b = SampleBatch();
  const std::vector<std::byte> bytes = Encode(b, kAllFields);
  auto v = DecodeBatch(bytes);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  std::set<std::string_view> names;
  uint64_t bytes_held = 0;
  ForEachBatchArray([&](const auto& array) {
    SCOPED_TRACE(std::string(array.name));
    EXPECT_TRUE(names.insert(array.name).second);
    EXPECT_FALSE((b.*array.owned).empty()) << "SampleBatch leaves it empty";
    EXPECT_EQ(Vec((*v).*array.viewed), b.*array.owned);
    bytes_held += (b.*array.owned).size() * sizeof((b.*array.owned)[0]);
  });
  EXPECT_EQ(b.size_bytes(), bytes_held);
  EXPECT_EQ(BytesPerToken(1), 16u);  // tokens, labels, loss_mask, one row of positions
  EXPECT_EQ(BytesPerToken(3), 24u);
}

TEST(BatchWire, AStageGetsOnlyItsFieldsAndFewerBytes) {
  const Batch b = SampleBatch();
  const auto last = Encode(b, FieldsOf(StageRole::kLast));
  auto v = DecodeBatch(last);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->has(kLabelField));
  EXPECT_FALSE(v->has(kTokenField));
  EXPECT_TRUE(v->tokens.empty());
  EXPECT_TRUE(v->pixel_values.empty());
  EXPECT_EQ(Vec(v->labels), b.labels);
  EXPECT_EQ(Vec(v->cu_seqlens), b.cu_seqlens);
  EXPECT_EQ(v->scalars.num_tokens, 4u);
  const auto middle = Encode(b, FieldsOf(StageRole::kMiddle));
  EXPECT_LT(middle.size(), last.size());
  EXPECT_LT(last.size(), Encode(b, kAllFields).size());
}

TEST(BatchWire, BadBytesAreCorruptNeverACrash) {
  const std::vector<std::byte> good = Encode(SampleBatch(), kAllFields);
  for (size_t n : {size_t{0}, size_t{10}, good.size() / 2, good.size() - 64}) {
    std::vector<std::byte> cut(good.begin(), good.begin() + n);
    EXPECT_EQ(DecodeBatch(cut).status().code(), StatusCode::kCorrupt) << n;
  }
  std::vector<std::byte> bad = good;
  bad[0] = std::byte{0};
  EXPECT_EQ(DecodeBatch(bad).status().code(), StatusCode::kCorrupt);
  // Claim more tokens than the arrays hold.
  bad = good;
  const uint64_t tokens = 5;
  std::memcpy(bad.data() + 16 + 40, &tokens, 8);  // Header::scalars.num_tokens
  auto v = DecodeBatch(bad);
  EXPECT_EQ(v.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(v.status().message().find("tokens"), std::string::npos) << v.status().message();
  // Claim more feature frames than input_features holds.
  bad = good;
  const uint32_t frames = 4;
  std::memcpy(bad.data() + 16 + 68, &frames, 4);  // Header::scalars.feature_frames
  v = DecodeBatch(bad);
  EXPECT_EQ(v.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(v.status().message().find("input_features"), std::string::npos) << v.status().message();
}

}  // namespace
}  // namespace mmpt::dist
