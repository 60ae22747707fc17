// `mmpt prepare` scaled out over separate processes, end to end through the mmpt binary: three
// MPI ranks under mpirun (one node of a cluster job), and independent runs joined by
// `mmpt merge` (Slurm array tasks). Each result must hold every input sample exactly once and
// equal a single-process prepare of the same inputs in content; a failed run leaves no manifest.
#include <gtest/gtest.h>
#include <algorithm>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "mmpt/core/hash.h"
#include "mmpt/core/mapped_file.h"
#include "mmpt/core/subprocess.h"
#include "mmpt/corpora/synth.h"
#include "mmpt/ingest/adapter.h"
#include "mmpt/ingest/prepare.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/store_test_util.h"
#ifdef MMPT_WITH_MPI
#include "mmpt/comm/mpirun_test_util.h"
#endif

namespace mmpt::ingest {
namespace {

namespace fs = std::filesystem;

constexpr int kCocoSamples = 30;
constexpr int kMmc4Samples = 8;
// Small shards, so 30 + 8 records make 8 shards to spread over the ranks.
constexpr char kPrepareFlags[] = " --samples-per-shard 5 --threads 1";

// Run the mmpt binary with `args`; stdout and stderr together.
Result<std::string> Mmpt(const std::string& args) {
  return RunCommand(std::string(MMPT_BINARY) + " " + args + " 2>&1");
}

// Names of the manifests in `dir` (mmpt.json, mmpt.part-*.json).
std::set<std::string> Manifests(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("mmpt", 0) == 0 && entry.path().extension() == ".json") names.insert(name);
  }
  return names;
}

// One sample as a dataset holds it, independent of the shard layout: the canonical sample
// (zip entry names cleared: they follow the layout), its token ids, each media item's bytes.
struct Content {
  store::Sample sample;
  std::vector<int32_t> tokens;
  std::vector<uint64_t> media_xxh3;
  bool operator==(const Content&) const = default;
};

// Every sample of `dir` by "source/key"; `duplicates` counts keys seen more than once.
std::map<std::string, Content> ContentByKey(const std::string& dir, int& duplicates) {
  std::map<std::string, Content> out;
  duplicates = 0;
  auto dataset = store::Dataset::Open(dir);
  EXPECT_TRUE(dataset.ok()) << dataset.status().ToString();
  if (!dataset.ok()) return out;
  store::SampleView view;
  for (uint64_t i = 0; i < dataset->num_samples(); ++i) {
    Status read = dataset->Sample(i)->Read(view);
    auto tokens = dataset->Sample(i)->Tokens();
    EXPECT_TRUE(read.ok() && tokens.ok()) << dir << " sample " << i;
    if (!read.ok() || !tokens.ok()) continue;
    Content content;
    content.sample = view.ToSample();
    for (size_t k = 0; k < content.sample.media.size(); ++k) {
      auto bytes = dataset->Sample(i)->Media(k);
      EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
      if (bytes.ok()) content.media_xxh3.push_back(Hash64(*bytes));
      content.sample.media[k].entry.clear();
    }
    content.tokens.assign(tokens->begin(), tokens->end());
    std::string id = dataset->sources()[dataset->source_of(i)] + "/" + content.sample.key;
    if (!out.emplace(id, std::move(content)).second) ++duplicates;
  }
  return out;
}

class PrepareDist : public ::testing::Test {
 protected:
  // A COCO corpus (real captions and image sizes) and an mmc4 one (real documents), written
  // with real image files, and a single-process prepare of both: the reference.
  static void SetUpTestSuite() {
    in_ = Dir("in");
    corpora::SynthOptions coco;
    coco.profile = "coco";
    coco.out_dir = in_;
    coco.samples = kCocoSamples;
    coco.image_format = "mix";
    coco.threads = 2;
    auto made = corpora::Synthesize(coco);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    corpora::SynthOptions mmc4 = coco;
    mmc4.profile = "mmc4";
    mmc4.format = InputFormat::kMmc4;
    mmc4.samples = kMmc4Samples;
    made = corpora::Synthesize(mmc4);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    inputs_ = " coco=" + in_ + "/coco.jsonl mmc4=" + in_ + "/mmc4.jsonl";
    single_ = Dir("single");
    auto run = Mmpt("prepare" + inputs_ + " --out " + single_ + kPrepareFlags);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
  }

  static void TearDownTestSuite() {
    std::error_code error;
    for (const std::string& dir : dirs_) fs::remove_all(dir, error);
  }

  // A fresh temporary directory, private to this process, removed after the suite.
  static std::string Dir(const std::string& name) {
    dirs_.push_back(store::testing::FreshDir("dist_" + name));
    return dirs_.back();
  }

  // The "source/key" of every input record, as prepare derives them.
  static std::multiset<std::string> InputKeys(
      const std::vector<std::pair<std::string, std::string>>& inputs) {
    std::multiset<std::string> keys;
    RecordParser parser;
    for (const auto& [source, path] : inputs) {
      std::ifstream file(path);
      std::string line;
      for (uint64_t number = 1; std::getline(file, line); ++number) {
        auto sample = parser.Parse(line, InputFormat::kAuto, {path, number});
        EXPECT_TRUE(sample.ok()) << sample.status().ToString();
        if (sample.ok()) keys.insert(source + "/" + sample->key);
      }
    }
    return keys;
  }

  // `dir` holds one manifest, passes `mmpt verify`, holds every input record exactly once
  // and equals the single-process reference sample by sample.
  static void ExpectSameAsSingleProcess(const std::string& dir) {
    EXPECT_EQ(Manifests(dir), std::set<std::string>{"mmpt.json"});
    auto verify = Mmpt("verify " + dir);
    EXPECT_TRUE(verify.ok()) << verify.status().ToString();
    int duplicates = 0;
    std::map<std::string, Content> got = ContentByKey(dir, duplicates);
    EXPECT_EQ(duplicates, 0);
    std::multiset<std::string> keys;
    for (const auto& [key, content] : got) keys.insert(key);
    EXPECT_EQ(keys, InputKeys({{"coco", in_ + "/coco.jsonl"}, {"mmc4", in_ + "/mmc4.jsonl"}}));
    EXPECT_EQ(got.size(), size_t{kCocoSamples + kMmc4Samples});
    int reference_duplicates = 0;
    std::map<std::string, Content> want = ContentByKey(single_, reference_duplicates);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [key, content] : want) {
      auto it = got.find(key);
      ASSERT_NE(it, got.end()) << key;
      EXPECT_TRUE(it->second == content) << key << " differs from the single-process dataset";
    }
    auto a = store::Dataset::Open(dir);
    auto b = store::Dataset::Open(single_);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->sources(), b->sources());
    uint64_t tokens_a = 0, tokens_b = 0;
    for (size_t s = 0; s < a->num_shards(); ++s) tokens_a += a->shards().tokens(s);
    for (size_t s = 0; s < b->num_shards(); ++s) tokens_b += b->shards().tokens(s);
    EXPECT_EQ(tokens_a, tokens_b);
    EXPECT_GT(tokens_a, 0u);
  }

  static inline std::string in_, single_, inputs_;
  static inline std::vector<std::string> dirs_;
};

// Two runs on disjoint halves of the COCO input (and the mmc4 input in the second), as two
// Slurm array tasks would run them, joined by `mmpt merge`: the merged directory gets one
// manifest and no copied shard; it verifies and equals the single-process dataset.
TEST_F(PrepareDist, IndependentRunsJoinByMergeWithoutCopyingShards) {
  std::ifstream coco(in_ + "/coco.jsonl");
  std::ofstream first(in_ + "/coco-a.jsonl"), second(in_ + "/coco-b.jsonl");
  std::string line;
  for (int i = 0; std::getline(coco, line); ++i) {
    (i < kCocoSamples / 2 ? first : second) << line << "\n";
  }
  first.close();
  second.close();
  const std::string root = Dir("tasks");
  auto task0 =
      Mmpt("prepare coco=" + in_ + "/coco-a.jsonl --out " + root + "/task0" + kPrepareFlags);
  ASSERT_TRUE(task0.ok()) << task0.status().ToString();
  auto task1 = Mmpt("prepare coco=" + in_ + "/coco-b.jsonl mmc4=" + in_ + "/mmc4.jsonl --out " +
                    root + "/task1" + kPrepareFlags);
  ASSERT_TRUE(task1.ok()) << task1.status().ToString();
  auto merge = Mmpt("merge --out " + root + "/all " + root + "/task0 " + root + "/task1");
  ASSERT_TRUE(merge.ok()) << merge.status().ToString();

  std::vector<std::string> written;
  for (const auto& entry : fs::recursive_directory_iterator(root + "/all")) {
    written.push_back(entry.path().filename().string());
  }
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written, (std::vector<std::string>{"mmpt.json", "mmpt.plan", "mmpt.shards"}))
      << "merge writes only its manifest and planning table, no shard copies";
  auto part0 = store::Dataset::Open(root + "/task0");
  auto part1 = store::Dataset::Open(root + "/task1");
  auto all = store::Dataset::Open(root + "/all");
  ASSERT_TRUE(part0.ok() && part1.ok() && all.ok());
  EXPECT_EQ(all->num_samples(), part0->num_samples() + part1->num_samples());
  EXPECT_EQ(part0->num_samples(), uint64_t{kCocoSamples / 2});
  // The COCO halves carry their own keys ("id"), so the union is the whole input's.
  ExpectSameAsSingleProcess(root + "/all");
}

// `--part I --parts 2` on the same inputs as two concurrent processes into one directory, then
// `mmpt merge` of that directory into another: the same dataset as one process.
TEST_F(PrepareDist, PartsOfOneRunInParallelProcessesMergeIntoTheWhole) {
  const std::string dir = Dir("parts");
  const std::string prepare =
      std::string(MMPT_BINARY) + " prepare" + inputs_ + " --out " + dir + kPrepareFlags;
  auto run = RunCommand("(" + prepare + " --part 0 --parts 2 & a=$!; " + prepare +
                        " --part 1 --parts 2 & b=$!; wait $a && wait $b) 2>&1");
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(Manifests(dir),
            (std::set<std::string>{PartManifestName(0, 2), PartManifestName(1, 2)}));
  const std::string all = Dir("parts_all");
  auto merge = Mmpt("merge --out " + all + " " + dir);
  ASSERT_TRUE(merge.ok()) << merge.status().ToString();
  ExpectSameAsSingleProcess(all);
}

#ifdef MMPT_WITH_MPI
// Three MPI ranks (separate processes under mpirun) each prepare their share into one
// directory; rank 0 merges: one manifest, verified, equal to the single-process dataset.
TEST_F(PrepareDist, MpiRanksWriteOneDatasetEqualToOneProcess) {
  const std::string dir = Dir("mpi");
  auto run = RunCommand(comm::testing::MpirunPrefix(3) + MMPT_BINARY + " prepare" + inputs_ +
                        " --out " + dir + kPrepareFlags + " 2>&1");
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_NE(run->find("rank " + std::to_string(rank) + " of 3:"), std::string::npos) << *run;
  }
  ExpectSameAsSingleProcess(dir);
}

// A bad record on rank 2 under --on-error fail fails the whole run, every rank's exit, with
// the error naming file:line, and leaves no manifest — not the stale one of an earlier run
// into the same directory, and no part manifest that `mmpt merge` could take for the whole.
TEST_F(PrepareDist, BadInputOnOneRankFailsTheRunAndLeavesNoManifest) {
  const std::string bad = in_ + "/bad.jsonl";
  {
    std::ifstream coco(in_ + "/coco.jsonl");
    std::ofstream out(bad);
    std::string line;
    // Shards of 5 records: line 12 is in the third shard, which rank 2 of 3 writes.
    for (int number = 1; std::getline(coco, line); ++number) {
      out << (number == 12 ? std::string(R"({"id":"broken","conversations": [)") : line) << "\n";
    }
  }
  const std::string dir = Dir("fail");
  auto earlier = Mmpt("prepare coco=" + in_ + "/coco.jsonl --out " + dir + kPrepareFlags);
  ASSERT_TRUE(earlier.ok()) << earlier.status().ToString();
  ASSERT_TRUE(fs::exists(dir + "/mmpt.json"));

  auto run = RunCommand(comm::testing::MpirunPrefix(3) + MMPT_BINARY + " prepare coco=" + bad +
                        " --out " + dir + kPrepareFlags + " --on-error fail 2>&1");
  ASSERT_FALSE(run.ok()) << "the run succeeded: " << *run;
  EXPECT_NE(run.status().message().find(bad + ":12:"), std::string::npos) << run.status().message();
  EXPECT_EQ(Manifests(dir), std::set<std::string>{});
  EXPECT_FALSE(store::Dataset::Open(dir).ok());
  EXPECT_FALSE(Mmpt("verify " + dir).ok());
  EXPECT_FALSE(Mmpt("merge --out " + dir + "/merged " + dir).ok());
}
#endif  // MMPT_WITH_MPI

}  // namespace
}  // namespace mmpt::ingest
