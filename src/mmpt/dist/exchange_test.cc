// The streaming exchange: placement, the per-step lists, and four peers that each hold a
// quarter of the shards exchanging a step's stored samples in process, at CP 1 and CP 2; the
// loader on the received samples gives the shared-storage batches byte for byte, bad samples
// included, and the bytes moved are the samples' stored bytes in the documented wire format.
#include "mmpt/dist/exchange.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/load/coco_corpus_test_util.h"
#include "mmpt/load/plan_stream.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/planning_table.h"

namespace mmpt::dist {

using namespace load;  // the loader and the Batch this module carries between ranks
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kPeers = 4;
constexpr uint32_t kShards = 8;
constexpr uint64_t kSteps = 2;

class ExchangeTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    root_ = test_util::FreshDir("exchange");
    Status built = testing::BuildCocoDataset(root_ + "/full", 64, kShards);
    ASSERT_TRUE(built.ok()) << built.ToString();
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static const store::Manifest& Manifest() {
    static const store::Manifest manifest = *store::ReadManifest(root_ + "/full");
    return manifest;
  }

  // What `peer` holds of `full` under `placement`: the manifest, shard and planning tables and
  // every `.meta`, and the other files of its own shards only (symlinks).
  static std::string NodeLocal(const std::string& full, const Placement& placement, uint32_t peer) {
    const std::string dir = fmt::format("{}_peer{}", full, peer);
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const char* name :
         {store::kManifestName, store::kShardTableName, store::kPlanningTableName}) {
      fs::copy_file(full + "/" + name, dir + "/" + name);
    }
    for (size_t shard = 0; shard < Manifest().shards.size(); ++shard) {
      const fs::path stem = Manifest().shards[shard].stem;
      fs::create_directories(fs::path(dir) / stem.parent_path());
      for (const auto& entry : fs::directory_iterator(fs::path(full) / stem.parent_path())) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(stem.filename().string() + ".", 0) != 0) continue;
        if (placement.holder(shard) == peer || entry.path().extension() == ".meta") {
          fs::create_symlink(entry.path(), fs::path(dir) / stem.parent_path() / name);
        }
      }
    }
    return dir;
  }

  static std::shared_ptr<PlanStream> Plans(const std::string& dir, uint32_t cp = 1) {
    PlanStreamConfig config;
    config.planner.layout.dp = kPeers / cp;
    config.planner.layout.cp = cp;
    config.planner.layout.ga = 2;
    config.planner.layout.seq_len = 1024;
    config.planner.layout.sync = plan::SyncModel::kStep;
    config.planner.seed = 11;
    auto stream = PlanStream::Open(dir, config);
    EXPECT_TRUE(stream.ok()) << stream.status().ToString();
    return *stream;
  }

  static std::vector<uint32_t> Identity() { return {0, 1, 2, 3}; }

  static std::string root_;
};
std::string ExchangeTest::root_;

TEST_F(ExchangeTest, PlacementRoundTripsThroughItsFileAndNamesWhatIsWrong) {
  auto placement = Placement::RoundRobin(Manifest().shards.size(), 3);
  ASSERT_TRUE(placement.ok());
  EXPECT_EQ(placement->ShardsOf(1), (std::vector<size_t>{1, 4, 7}));
  const std::string path = root_ + "/placement.json";
  ASSERT_TRUE(placement->Write(path, Manifest()).ok());
  auto read = Placement::Read(path, Manifest());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->peers(), 3u);
  for (size_t shard = 0; shard < kShards; ++shard) {
    EXPECT_EQ(read->holder(shard), shard % 3);
  }
  EXPECT_FALSE(Placement::RoundRobin(Manifest().shards.size(), 0).ok());

  auto expect_error = [&](const std::string& json, const std::string& part) {
    ASSERT_TRUE(WriteFileAtomic(path, json).ok());
    auto bad = Placement::Read(path, Manifest());
    ASSERT_FALSE(bad.ok()) << json;
    EXPECT_NE(bad.status().message().find(part), std::string::npos) << bad.status().ToString();
    EXPECT_NE(bad.status().message().find(path), std::string::npos);
  };
  expect_error(R"({"peers": 2, "shards": {"coco/00000": 0}})", "'coco/00001' of the manifest");
  std::string all = R"({"peers": 2, "shards": {)";
  for (const store::ShardInfo& shard : Manifest().shards) all += "\"" + shard.stem + "\": 1, ";
  expect_error(all + R"("coco/99999": 0}})", "'coco/99999' is not in the manifest");
  std::string out_of_range = all;
  out_of_range.replace(out_of_range.rfind(": 1"), 3, ": 2");
  expect_error(out_of_range.substr(0, out_of_range.size() - 2) + "}}", "peer 2, outside 0..1");
  expect_error("[1, 2]", "not a placement file");
}

TEST_F(ExchangeTest, ListsSendEachTrainerItsPacksFromTheirHoldersInPlanOrder) {
  auto placement = Placement::RoundRobin(Manifest().shards.size(), kPeers);
  auto dataset = store::Dataset::Open(root_ + "/full");
  ASSERT_TRUE(dataset.ok());
  auto plans = Plans(root_ + "/full");
  // Trainers in another order than the peers, so the two numberings cannot be confused.
  const std::vector<uint32_t> trainer = {2, 0, 3, 1};
  for (uint64_t step = 0; step < kSteps; ++step) {
    auto plan = plans->Plan(step);
    ASSERT_TRUE(plan.ok());
    std::vector<ExchangeLists> lists;
    for (uint32_t p = 0; p < kPeers; ++p) {
      auto l = PlanExchangeLists(**plan, *placement, ShardsOf(*dataset), trainer, p);
      ASSERT_TRUE(l.ok()) << l.status().ToString();
      lists.push_back(*l);
    }
    for (uint32_t d = 0; d < kPeers; ++d) {
      const uint32_t q = trainer[d];
      // What q receives from all holders is exactly its packs' samples.
      std::vector<uint32_t> want, got;
      for (const plan::PlannedPack& pack : (*plan)->RankPacks(d)) {
        for (uint32_t k = pack.sequence_begin; k < pack.sequence_end; ++k) want.push_back(k);
      }
      for (uint32_t p = 0; p < kPeers; ++p) {
        // What p sends to q is what q expects from p, in plan order, from p's shards.
        EXPECT_EQ(lists[p].send[q], lists[q].receive[p]);
        EXPECT_TRUE(std::is_sorted(lists[p].send[q].begin(), lists[p].send[q].end()));
        for (uint32_t k : lists[p].send[q]) {
          const plan::PlannedSequence& seq = (*plan)->sequences[k];
          const uint64_t global = *dataset->GlobalIndex(seq.source, seq.index);
          EXPECT_EQ(placement->holder(dataset->Locate(global).first), p);
        }
        got.insert(got.end(), lists[q].receive[p].begin(), lists[q].receive[p].end());
      }
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, want);
    }
    // Some samples cross peers (the test would be empty otherwise).
    EXPECT_GT(lists[0].send[trainer[1]].size() + lists[1].send[trainer[0]].size(), 0u);
  }

  auto plan = plans->Plan(0);
  const std::vector<uint32_t> repeated = {0, 1, 1, 2}, too_few = {0, 1};
  auto wrong = PlanExchangeLists(**plan, *placement, ShardsOf(*dataset), repeated, 0);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("DP rank 2 CP rank 0 is trained by peer 1"),
            std::string::npos);
  EXPECT_FALSE(PlanExchangeLists(**plan, *placement, ShardsOf(*dataset), too_few, 0).ok());

  // Under CP 2 both CP ranks of a DP rank receive all of its packs' samples.
  auto cp2 = Plans(root_ + "/full", 2)->Plan(0);
  ASSERT_TRUE(cp2.ok());
  auto short_list = PlanExchangeLists(**cp2, *placement, ShardsOf(*dataset), too_few, 0);
  ASSERT_FALSE(short_list.ok());
  EXPECT_NE(short_list.status().message().find("dp 2 × cp 2"), std::string::npos);
  for (uint32_t p = 0; p < kPeers; ++p) {
    auto l = PlanExchangeLists(**cp2, *placement, ShardsOf(*dataset), trainer, p);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    for (uint32_t d = 0; d < 2; ++d)
      EXPECT_EQ(l->send[trainer[2 * d]], l->send[trainer[2 * d + 1]]);
  }
}

// The record of sample `global` (ExchangeRecordBytes), with the media items `sent` accepts.
template <typename Sent>
uint64_t StoredRecordBytes(const store::Dataset& dataset, uint64_t global, Sent sent) {
  std::vector<uint64_t> media;
  const size_t items = dataset.Sample(global)->media().size();
  for (size_t k = 0; k < items; ++k) {
    if (sent(k)) media.push_back(dataset.Sample(global)->Media(k)->size());
  }
  return ExchangeRecordBytes(dataset.Sample(global)->Line()->size(),
                             static_cast<uint32_t>(dataset.Sample(global)->Tokens()->size()),
                             static_cast<uint32_t>(items), media);
}

// Every batch of DP rank `dp_rank`'s loader on `source` for the test's steps.
std::vector<std::shared_ptr<Batch>> LoadAll(std::shared_ptr<const SampleSource> source,
                                            PlanStream& plans, uint32_t dp_rank, ErrorPolicy policy,
                                            uint32_t cp_rank = 0) {
  LoaderOptions options;
  options.dp_rank = dp_rank;
  options.cp_rank = cp_rank;
  options.end_step = kSteps;
  options.on_error = policy;
  auto loader = Loader::Start(std::move(source), plans.AsFunction(), options);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  std::vector<std::shared_ptr<Batch>> batches;
  while (loader.ok()) {
    auto batch = (*loader)->Next();
    EXPECT_TRUE(batch.ok()) << batch.status().ToString();
    if (!batch.ok() || *batch == nullptr) break;
    batches.push_back(*batch);
  }
  return batches;
}

// Run the exchange of `steps` among four peers over node-local copies of `full` (an in-process
// all-to-all-v), peer p training (DP rank p / cp, CP rank p % cp), then each peer's loader on
// what it received; return the batches by peer.
std::vector<std::vector<std::shared_ptr<Batch>>> ExchangeAndLoad(const std::string& full,
                                                                 const Placement& placement,
                                                                 ErrorPolicy policy,
                                                                 std::vector<ExchangeStats>* stats,
                                                                 uint32_t cp = 1) {
  std::vector<std::unique_ptr<Exchanger>> peers;
  std::vector<std::shared_ptr<PlanStream>> plans;
  for (uint32_t p = 0; p < kPeers; ++p) {
    const std::string local = ExchangeTest::NodeLocal(full, placement, p);
    auto source = DatasetSource::Open(local);
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    plans.push_back(ExchangeTest::Plans(local, cp));  // planned from the node-local copy alone
    ExchangerOptions options;
    options.peer = p;
    options.trainer_peer = ExchangeTest::Identity();
    auto x = Exchanger::Create(*source, plans.back()->AsFunction(), placement, options);
    EXPECT_TRUE(x.ok()) << x.status().ToString();
    peers.push_back(std::move(*x));
  }
  for (uint64_t step = 0; step < kSteps; ++step) {
    std::vector<Exchanger::Outgoing> out;
    for (auto& x : peers) {
      auto packed = x->Pack(step);
      EXPECT_TRUE(packed.ok()) << packed.status().ToString();
      out.push_back(std::move(*packed));
    }
    for (uint32_t q = 0; q < kPeers; ++q) {
      std::vector<uint64_t> bytes;
      for (uint32_t p = 0; p < kPeers; ++p) bytes.push_back(out[p].bytes[q]);
      std::span<std::byte> into = peers[q]->Receive(step, bytes);
      for (uint32_t p = 0; p < kPeers; ++p) {
        uint64_t offset = 0;
        for (uint32_t r = 0; r < q; ++r) offset += out[p].bytes[r];
        std::memcpy(into.data(), out[p].buffer.data() + offset, bytes[p]);
        into = into.subspan(bytes[p]);
      }
      Status unpacked = peers[q]->Unpack(step);
      EXPECT_TRUE(unpacked.ok()) << unpacked.ToString();
    }
  }
  std::vector<std::vector<std::shared_ptr<Batch>>> batches;
  for (uint32_t q = 0; q < kPeers; ++q) {
    batches.push_back(LoadAll(peers[q]->source(), *plans[q], q / cp, policy, q % cp));
    stats->push_back(peers[q]->stats());
  }
  return batches;
}

// The batches of a loader on shared storage (the whole dataset).
// (By peer, as ExchangeAndLoad numbers them.)
std::vector<std::vector<std::shared_ptr<Batch>>> LoadShared(const std::string& full,
                                                            ErrorPolicy policy, uint32_t cp = 1) {
  auto source = DatasetSource::Open(full);
  EXPECT_TRUE(source.ok());
  auto plans = ExchangeTest::Plans(full, cp);
  std::vector<std::vector<std::shared_ptr<Batch>>> batches;
  for (uint32_t q = 0; q < kPeers; ++q) {
    batches.push_back(LoadAll(*source, *plans, q / cp, policy, q % cp));
  }
  return batches;
}

void ExpectSameBatches(const std::vector<std::vector<std::shared_ptr<Batch>>>& got,
                       const std::vector<std::vector<std::shared_ptr<Batch>>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t d = 0; d < got.size(); ++d) {
    ASSERT_EQ(got[d].size(), want[d].size());
    ASSERT_EQ(got[d].size(), kSteps * 2);
    for (size_t i = 0; i < got[d].size(); ++i) {
      SCOPED_TRACE(fmt::format("dp rank {} batch {}", d, i));
      const Batch& g = *got[d][i];
      const Batch& w = *want[d][i];
      EXPECT_EQ(g.plan_hash, w.plan_hash);
      EXPECT_EQ(g.tokens, w.tokens);
      EXPECT_EQ(g.labels, w.labels);
      EXPECT_EQ(g.loss_mask, w.loss_mask);
      EXPECT_EQ(g.position_ids, w.position_ids);
      EXPECT_EQ(g.cu_seqlens, w.cu_seqlens);
      EXPECT_EQ(g.cu_seqlens_padded, w.cu_seqlens_padded);
      EXPECT_EQ(g.image_grid_thw, w.image_grid_thw);
      EXPECT_EQ(g.image_rows, w.image_rows);
      EXPECT_EQ(g.encoded_images, w.encoded_images);
      EXPECT_EQ(g.sample_index, w.sample_index);
      ASSERT_EQ(g.pixel_values.size(), w.pixel_values.size());
      EXPECT_EQ(std::memcmp(g.pixel_values.data(), w.pixel_values.data(),
                            g.pixel_values.size() * sizeof(float)),
                0);
      ASSERT_EQ(g.dropped.size(), w.dropped.size());
      for (size_t k = 0; k < g.dropped.size(); ++k) {
        EXPECT_EQ(g.dropped[k].index, w.dropped[k].index);
        // The same error, naming the holder's copy of the shard instead of the shared one.
        const std::string_view gr = g.dropped[k].reason, wr = w.dropped[k].reason;
        EXPECT_EQ(gr.substr(gr.find("/coco/")), wr.substr(wr.find("/coco/")));
      }
    }
  }
}

TEST_F(ExchangeTest, FourPeersWithAQuarterOfTheShardsEachLoadTheSharedStorageBatches) {
  auto placement = Placement::RoundRobin(Manifest().shards.size(), kPeers);
  std::vector<ExchangeStats> stats;
  auto got = ExchangeAndLoad(root_ + "/full", *placement, ErrorPolicy::kFail, &stats);
  ExpectSameBatches(got, LoadShared(root_ + "/full", ErrorPolicy::kFail));

  // Every byte sent was received by its peer, and some crossed peers.
  uint64_t crossed = 0;
  for (uint32_t p = 0; p < kPeers; ++p) {
    for (uint32_t q = 0; q < kPeers; ++q) {
      EXPECT_EQ(stats[p].bytes_sent[q], stats[q].bytes_received[p]);
      EXPECT_EQ(stats[p].samples_sent[q], stats[q].samples_received[p]);
      if (p != q) crossed += stats[p].bytes_sent[q];
    }
    EXPECT_EQ(stats[p].steps, kSteps);
  }
  EXPECT_GT(crossed, 0u);
  // The bytes a peer received are its batches' samples' stored bytes (every item at CP 1) in
  // the documented wire format.
  auto dataset = store::Dataset::Open(root_ + "/full");
  ASSERT_TRUE(dataset.ok());
  for (uint32_t q = 0; q < kPeers; ++q) {
    uint64_t want = 0;
    for (const auto& batch : got[q]) {
      for (size_t s = 0; s < batch->sample_index.size(); ++s) {
        const uint64_t global =
            *dataset->GlobalIndex(batch->sample_source[s], batch->sample_index[s]);
        want += StoredRecordBytes(*dataset, global, [](size_t) { return true; });
      }
    }
    uint64_t received = 0;
    for (uint64_t b : stats[q].bytes_received) received += b;
    EXPECT_EQ(received, want) << "peer " << q;
  }
}

TEST_F(ExchangeTest, UnderCp2EachCpRankGetsTheMediaItEncodesAndTheSharedStorageBatches) {
  auto placement = Placement::RoundRobin(Manifest().shards.size(), kPeers);
  std::vector<ExchangeStats> stats;
  auto got = ExchangeAndLoad(root_ + "/full", *placement, ErrorPolicy::kFail, &stats, 2);
  ExpectSameBatches(got, LoadShared(root_ + "/full", ErrorPolicy::kFail, 2));
  // Both CP ranks of a DP rank get each sample's line and ids; each image goes once, to the
  // CP rank that encodes it (the batch's encoded_images), so the two together receive every
  // image of their packs exactly once.
  auto dataset = store::Dataset::Open(root_ + "/full");
  ASSERT_TRUE(dataset.ok());
  uint64_t images = 0;
  for (uint32_t q = 0; q < kPeers; ++q) {
    uint64_t want = 0;
    for (const auto& batch : got[q]) {
      // The micro-step's vision items: its samples' images in order (one pack, images only).
      std::vector<std::pair<size_t, size_t>> items;  // (sample in batch, media index)
      for (size_t s = 0; s < batch->sample_index.size(); ++s) {
        const uint64_t global =
            *dataset->GlobalIndex(batch->sample_source[s], batch->sample_index[s]);
        for (size_t k = 0; k < dataset->Sample(global)->media().size(); ++k)
          items.emplace_back(s, k);
      }
      std::set<std::pair<size_t, size_t>> encoded;
      for (int32_t e : batch->encoded_images) encoded.insert(items.at(e));
      images += encoded.size();
      for (size_t s = 0; s < batch->sample_index.size(); ++s) {
        const uint64_t global =
            *dataset->GlobalIndex(batch->sample_source[s], batch->sample_index[s]);
        want += StoredRecordBytes(*dataset, global, [&](size_t k) {
          return encoded.count({s, k}) > 0;
        });
      }
    }
    uint64_t received = 0;
    for (uint64_t b : stats[q].bytes_received) received += b;
    EXPECT_EQ(received, want) << "peer " << q;
  }
  uint64_t planned = 0;
  for (const auto& batch : got[0]) planned += batch->image_rows.size();  // DP rank 0's items
  for (const auto& batch : got[2]) planned += batch->image_rows.size();  // DP rank 1's
  EXPECT_EQ(images, planned);  // each image of the step's packs sent once
}

TEST_F(ExchangeTest, ABadSampleTravelsAsItsErrorAndIsDroppedAsWithSharedStorage) {
  const std::string full = root_ + "/bad";
  fs::remove_all(full);
  fs::copy(root_ + "/full", full, fs::copy_options::recursive);
  // Damage the first image of the first sample of DP rank 1's first pack.
  auto plan = Plans(full)->Plan(0);
  auto dataset = store::Dataset::Open(full);
  const plan::PlannedSequence& seq = (*plan)->Sequences((*plan)->Pack(1, 0)).front();
  const uint64_t global = *dataset->GlobalIndex(seq.source, seq.index);
  auto [shard, local] = dataset->Locate(global);
  const store::MediaMeta m = dataset->Sample(global)->media()[0];
  {
    std::fstream zip(full + "/" + Manifest().shards[shard].stem + ".zip",
                     std::ios::in | std::ios::out | std::ios::binary);
    zip.seekp(static_cast<std::streamoff>(m.data_offset + m.data_size / 2));
    zip.write("\x5a\xa5\x5a\xa5", 4);
  }
  auto placement = Placement::RoundRobin(Manifest().shards.size(), kPeers);
  std::vector<ExchangeStats> stats;
  auto got = ExchangeAndLoad(full, *placement, ErrorPolicy::kSkip, &stats);
  auto want = LoadShared(full, ErrorPolicy::kSkip);
  ASSERT_EQ(want[1][0]->dropped.size(), 1u);
  EXPECT_EQ(want[1][0]->dropped[0].index, seq.index);
  ExpectSameBatches(got, want);
  // The error names the holder's shard line (not a path the trainer could read).
  EXPECT_NE(got[1][0]->dropped[0].reason.find("CRC-32"), std::string::npos);
  EXPECT_NE(got[1][0]->dropped[0].reason.find(Manifest().shards[shard].stem + ".jsonl:"),
            std::string::npos);
}

TEST_F(ExchangeTest, APeerOpensItsPartOfTheDatasetAndNamesAShardItDoesNotHold) {
  auto placement = Placement::RoundRobin(Manifest().shards.size(), kPeers);
  const std::string local = NodeLocal(root_ + "/full", *placement, 1);
  auto source = DatasetSource::Open(local);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto plans = Plans(local);
  auto plan = plans->Plan(0);
  ASSERT_TRUE(plan.ok());
  size_t held = 0, absent = 0;
  for (const plan::PlannedSequence& seq : (*plan)->sequences) {
    const uint64_t global = *(*source)->dataset().GlobalIndex(seq.source, seq.index);
    const size_t shard = (*source)->dataset().Locate(global).first;
    auto rendered = (*source)->Render(**plan, seq);
    if (placement->holder(shard) == 1) {
      EXPECT_TRUE(rendered.ok()) << rendered.status().ToString();
      ++held;
    } else {
      ASSERT_FALSE(rendered.ok());
      EXPECT_NE(rendered.status().message().find(Manifest().shards[shard].stem + ".jsonl"),
                std::string::npos)
          << rendered.status().ToString();
      ++absent;
    }
  }
  EXPECT_GT(held, 0u);
  EXPECT_GT(absent, 0u);
}

TEST_F(ExchangeTest, ATrainerWaitsForItsStepThenTimesOutOrFailsWithTheExchangesError) {
  auto placement = Placement::RoundRobin(Manifest().shards.size(), kPeers);
  auto source = DatasetSource::Open(root_ + "/full");
  auto plans = Plans(root_ + "/full");
  ExchangerOptions options;
  options.peer = 0;
  options.trainer_peer = Identity();
  options.timeout_seconds = 0.2;
  auto x = Exchanger::Create(*source, plans->AsFunction(), *placement, options);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  auto plan = plans->Plan(0);
  const plan::PlannedSequence& seq = (*plan)->Sequences((*plan)->Pack(0, 0)).front();
  auto late = (*x)->source()->Render(**plan, seq);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), StatusCode::kTimeout);
  EXPECT_NE(late.status().message().find("step 0 have not arrived after 0.2 s"), std::string::npos)
      << late.status().ToString();

  // What arrived cut short is named by its peer and step (a peer's own share, cut, and
  // nothing from the others).
  for (uint32_t p = 0; p < kPeers; ++p) {
    options.peer = p;
    auto self = Exchanger::Create(*source, plans->AsFunction(), *placement, options);
    ASSERT_TRUE(self.ok()) << self.status().ToString();
    auto out = (*self)->Pack(0);
    ASSERT_TRUE(out.ok());
    if (out->bytes[p] == 0) continue;
    uint64_t offset = 0;
    for (uint32_t q = 0; q < p; ++q) offset += out->bytes[q];
    std::vector<uint64_t> bytes(kPeers, 0);
    bytes[p] = out->bytes[p] - 4;
    std::span<std::byte> into = (*self)->Receive(0, bytes);
    std::memcpy(into.data(), out->buffer.data() + offset, bytes[p]);
    EXPECT_EQ((*self)->Unpack(1).code(), StatusCode::kInvalidArgument);  // not received
    Status cut = (*self)->Unpack(0);
    ASSERT_FALSE(cut.ok());
    EXPECT_EQ(cut.code(), StatusCode::kCorrupt);
    EXPECT_NE(cut.message().find("exchange step 0, from peer "), std::string::npos);
    EXPECT_NE(cut.message().find("cut short"), std::string::npos) << cut.ToString();
    break;
  }

  (*x)->source()->received().Fail(Status::IOError("exchange step 0: peer 3 did not answer"));
  auto failed = (*x)->source()->Render(**plan, seq);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("peer 3"), std::string::npos);
  // A restarted exchange forgets the failure: the trainer waits again.
  (*x)->source()->received().Reset();
  auto waiting = (*x)->source()->Render(**plan, seq);
  ASSERT_FALSE(waiting.ok());
  EXPECT_EQ(waiting.status().code(), StatusCode::kTimeout);
}

// A grouped video (Qwen3-VL's timestamped groups) is one medium of several records: its bytes
// travel once, marked at its first record.
// Real records of the COCO dataset: each decodes to its sample's stored bytes, with exactly the
// media sent; a record of another sample, cut short, with words left over, with padding that is
// not zero or with a message under an OK status is Corrupt, naming where it came from.
TEST_F(ExchangeTest, RealRecordsDecodeToTheirStoredBytesAndDamagedOnesAreCorrupt) {
  auto dataset = store::Dataset::Open(root_ + "/full");
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  std::vector<RecordKey> keys;
  std::vector<StoredSample> samples;
  std::vector<uint32_t> words, record;
  std::vector<size_t> begins;  // each record's first word
  for (uint64_t global : {0u, 5u, 17u}) {
    const store::StoredSample held = *dataset->Sample(global);
    StoredSample sample{*held.Line(), *held.Tokens(), {}, held};
    for (size_t m = 0; m < held.media().size(); ++m) sample.media.push_back(*held.Media(m));
    keys.push_back({static_cast<uint32_t>(keys.size()), 0, global});
    const std::vector<uint8_t> sent(sample.media.size(), keys.size() % 2);  // all, none, all
    EncodeRecord(keys.back(), sample, sent, record);
    std::vector<uint64_t> sent_bytes;
    for (size_t m = 0; m < sample.media.size(); ++m) {
      if (sent[m]) sent_bytes.push_back(sample.media[m].size());
    }
    EXPECT_EQ(record.size() * 4, ExchangeRecordBytes(sample.line.size(), sample.tokens.size(),
                                                     sample.media.size(), sent_bytes));
    begins.push_back(words.size());
    words.insert(words.end(), record.begin(), record.end());
    samples.push_back(std::move(sample));
  }
  const Status failed = Status::Corrupt("shard 3 line 7: bad crc");
  keys.push_back({3, 0, 99});
  EncodeRecord(keys.back(), failed, {}, record);
  words.insert(words.end(), record.begin(), record.end());

  std::vector<ReceivedSample> received;
  ASSERT_TRUE(DecodeRecords(words, keys, "peer 2", received).ok());
  ASSERT_EQ(received.size(), 4u);
  for (size_t i = 0; i < samples.size(); ++i) {
    ASSERT_TRUE(received[i].status.ok());
    EXPECT_EQ(received[i].line, samples[i].line);
    EXPECT_TRUE(std::equal(received[i].tokens.begin(), received[i].tokens.end(),
                           samples[i].tokens.begin(), samples[i].tokens.end()));
    ASSERT_EQ(received[i].media.size(), samples[i].media.size());
    for (size_t m = 0; m < samples[i].media.size(); ++m) {
      ASSERT_EQ(received[i].media[m].has_value(), i % 2 == 0) << i;
      if (received[i].media[m]) {
        EXPECT_TRUE(std::equal(received[i].media[m]->begin(), received[i].media[m]->end(),
                               samples[i].media[m].begin(), samples[i].media[m].end()));
      }
    }
  }
  EXPECT_EQ(received[3].status.code(), failed.code());
  EXPECT_EQ(received[3].status.message(), failed.message());

  auto corrupt = [&](std::vector<uint32_t> damaged, std::span<const RecordKey> expected,
                     std::string_view what) {
    std::vector<ReceivedSample> out;
    const Status status = DecodeRecords(damaged, expected, "peer 2", out);
    EXPECT_EQ(status.code(), StatusCode::kCorrupt) << what << ": " << status.ToString();
    EXPECT_NE(status.message().find("peer 2"), std::string::npos) << status.ToString();
    EXPECT_NE(status.message().find(what), std::string::npos) << status.ToString();
  };
  std::vector<RecordKey> other = keys;
  other[1].index += 1;
  corrupt(words, other, "expected the record of planned sample 1");
  corrupt({words.begin(), words.end() - 1}, keys, "cut short");
  std::vector<uint32_t> longer = words;
  longer.push_back(0);
  corrupt(longer, keys, "words left");
  // A line whose length is not a multiple of 4 ends mid-word: its last word's top byte pads.
  size_t i = 0;
  while (i < samples.size() && samples[i].line.size() % 4 == 0) ++i;
  ASSERT_LT(i, samples.size()) << "no sample's line pads";
  std::vector<uint32_t> padded = words;
  padded[begins[i] + 8 + samples[i].line.size() / 4] |= 0xff000000u;  // 7 header words, size
  corrupt(padded, keys, "padding not zero");
  std::vector<uint32_t> chatty = words;
  chatty[6] = 2;  // the first record's OK status gets a 2-byte message
  chatty.insert(chatty.begin() + 7, 0x6968);
  corrupt(chatty, keys, "an OK status with a message");
}

TEST(DecodedMediaTest, AGroupedVideosBytesTravelOnceWithItsFirstRecord) {
  plan::StepPlan plan;
  plan.layout.cp = 1;
  std::vector<store::MediaMeta> media(5);
  media[0].kind = store::MediaKind::kImage;
  for (uint16_t g = 0; g < 3; ++g) {
    media[1 + g].kind = store::MediaKind::kVideo;
    media[1 + g].group = g;
    media[1 + g].groups = 3;
  }
  media[4].kind = store::MediaKind::kAudio;
  EXPECT_EQ(DecodedMedia(plan, 0, 0, 0, media), (std::vector<uint8_t>{1, 1, 0, 0, 1}));
}

}  // namespace
}  // namespace mmpt::dist
