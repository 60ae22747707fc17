// The shard format end to end: writer → files on disk → Dataset reads equal to what went in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "mmpt/core/mapped_file.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/jsonl_index.h"
#include "mmpt/store/shard_writer.h"
#include "mmpt/store/store_test_util.h"
#include "mmpt/store/zip_reader.h"
#include "mmpt/store/zip_writer.h"

namespace mmpt::store {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) { return testing::FreshDir("shard_" + name); }

TEST(JsonlIndexTest, OffsetsMatchEnergonLayout) {
  std::string text = "{\"a\":1}\n{\"b\":22}\n\n{\"c\":3}";
  std::vector<uint64_t> offsets = BuildLineIndex(text);
  // The blank line starts no record; the unterminated last line does; then the file size.
  EXPECT_EQ(offsets, (std::vector<uint64_t>{0, 8, 18, text.size()}));
  std::string bytes = EncodeLineIndex(offsets);
  ASSERT_EQ(bytes.size(), 4 * 8u);
  uint64_t second = 0;
  std::memcpy(&second, bytes.data() + 8, 8);  // little-endian uint64, Energon's struct "Q"
  EXPECT_EQ(second, 8u);
  alignas(8) char aligned[32];
  std::memcpy(aligned, bytes.data(), 32);
  auto index = LineIndex::FromBytes(std::as_bytes(std::span(aligned)), text.size(), "t.idx");
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(index->size(), 3u);
  EXPECT_EQ(LineAt(text, *index, 1), "{\"b\":22}");
  EXPECT_EQ(LineAt(text, *index, 2), "{\"c\":3}");
  EXPECT_TRUE(BuildLineIndex("") == std::vector<uint64_t>{0});
}

TEST(JsonlIndexTest, DamagedIndexIsCorrupt) {
  alignas(8) uint64_t offsets[] = {0, 8, 5, 20};
  auto bytes = std::as_bytes(std::span(offsets));
  auto decreasing = LineIndex::FromBytes(bytes, 20, "d.idx");
  ASSERT_FALSE(decreasing.ok());
  EXPECT_NE(decreasing.status().message().find("entry 2"), std::string::npos);
  alignas(8) uint64_t good[] = {0, 8, 20};
  EXPECT_FALSE(LineIndex::FromBytes(std::as_bytes(std::span(good)), 21, "s.idx").ok());
  EXPECT_FALSE(LineIndex::FromBytes(std::as_bytes(std::span(good)).first(12), 20, "t").ok());
  EXPECT_TRUE(LineIndex::FromBytes(std::as_bytes(std::span(good)), 20, "ok").ok());
}

TEST(ZipTest, StoredEntriesReadBackZeroCopyAndPassUnzip) {
  std::string dir = TempDir("zip");
  std::string a = "first entry bytes";
  std::string b(100000, 'x');
  for (size_t i = 0; i < b.size(); i += 7) b[i] = static_cast<char>(i);
  std::vector<ZipInput> inputs = {{"000000.0.jpg", std::as_bytes(std::span(a))},
                                  {"000001.0.png", std::as_bytes(std::span(b))}};
  std::string path = dir + "/t.zip";
  ASSERT_TRUE(WriteStoredZip(path, inputs).ok());
  auto zip = ZipReader::Open(path);
  ASSERT_TRUE(zip.ok()) << zip.status().ToString();
  ASSERT_EQ(zip->entries().size(), 2u);
  EXPECT_EQ(zip->entries()[1].name, "000001.0.png");
  EXPECT_EQ(zip->entries()[1].method, 0);
  auto data = zip->Data(1);
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()), b);
  EXPECT_EQ(zip->entries()[1].crc32, Crc32(std::as_bytes(std::span(b))));
  // The span points into the mapping: no copy was made.
  EXPECT_GE(data.data(), zip->bytes().data());
  EXPECT_LT(data.data(), zip->bytes().data() + zip->bytes().size());
  EXPECT_EQ(std::system(("unzip -tq " + path + " >/dev/null").c_str()), 0);
  // Identical inputs give identical archives (fixed timestamps).
  ASSERT_TRUE(WriteStoredZip(dir + "/u.zip", inputs).ok());
  EXPECT_EQ(*ReadFileToString(path), *ReadFileToString(dir + "/u.zip"));
}

TEST(ZipTest, EveryTruncationIsAnErrorNotACrash) {
  std::string dir = TempDir("ziptrunc");
  std::string a = "abc";
  std::vector<ZipInput> inputs = {{"a.bin", std::as_bytes(std::span(a))}};
  ASSERT_TRUE(WriteStoredZip(dir + "/t.zip", inputs).ok());
  std::string bytes = *ReadFileToString(dir + "/t.zip");
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto zip = ZipReader::Parse(std::as_bytes(std::span(bytes.data(), n)), "t.zip");
    EXPECT_FALSE(zip.ok()) << n;
  }
  EXPECT_TRUE(ZipReader::Parse(std::as_bytes(std::span(bytes)), "t.zip").ok());
}

Sample MakeSample(int i, int num_media) {
  Sample s;
  s.key = "key" + std::to_string(i);
  s.segments.push_back({"user", 0, false, "text of sample " + std::to_string(i), 0});
  for (int k = 0; k < num_media; ++k) {
    s.media.push_back({"img/" + std::to_string(i) + "_" + std::to_string(k) + ".jpg", "",
                       static_cast<uint32_t>(100 + i), static_cast<uint32_t>(50 + k), 1});
    s.segments.push_back({"user", 0, true, "", static_cast<uint32_t>(k)});
  }
  return s;
}

TEST(ShardTest, WriterThenDatasetReadsEqualInputs) {
  std::string dir = TempDir("dataset");
  Manifest manifest;
  manifest.tokenizer = "stand-in";
  manifest.vision = "qwen2-vl";
  manifest.chat_template = "{}";  // not rendered here: the test hands the writer its tokens
  std::vector<Sample> inputs;
  std::vector<std::vector<std::string>> media_bytes;
  for (int shard = 0; shard < 2; ++shard) {
    ShardWriter writer(dir, "src/0000" + std::to_string(shard), "src");
    for (int i = 0; i < 5; ++i) {
      int global = shard * 5 + i;
      Sample s = MakeSample(global, global % 3);
      std::vector<MediaBlob> blobs;
      std::vector<std::string> bytes;
      for (size_t k = 0; k < s.media.size(); ++k) {
        bytes.push_back(std::string(1000 + global * 10 + k, static_cast<char>('a' + k)));
        blobs.push_back({bytes.back(), 1});
      }
      if (global == 4) {  // a metadata-only item
        s.media.back().path.clear();
        blobs.back().bytes.clear();
        bytes.back().clear();
      }
      std::vector<int32_t> tokens = {global, global + 1, global + 2};
      inputs.push_back(s);
      media_bytes.push_back(bytes);
      // Every image after the text's 3 tokens.
      const std::vector<uint32_t> positions(s.media.size(), 3);
      ASSERT_TRUE(writer.Add(s, std::move(blobs), tokens, positions).ok());
    }
    auto info = writer.Finish();
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->samples, 5u);
    manifest.shards.push_back(*info);
  }
  ASSERT_TRUE(WriteManifest(dir, manifest).ok());
  EXPECT_EQ(std::system(("unzip -tq " + dir + "/src/00000.zip >/dev/null").c_str()), 0);

  auto dataset = Dataset::Open(dir);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  ASSERT_EQ(dataset->num_samples(), 10u);
  SampleView view;
  for (uint64_t i = 0; i < 10; ++i) {
    Status read = dataset->Sample(i)->Read(view);
    ASSERT_TRUE(read.ok()) << read.ToString();
    Sample sample = view.ToSample();
    EXPECT_EQ(sample.key, inputs[i].key);
    EXPECT_EQ(sample.source, "src");
    EXPECT_EQ(sample.segments, inputs[i].segments);
    ASSERT_EQ(sample.media.size(), inputs[i].media.size());
    EXPECT_EQ(dataset->Sample(i)->meta().text_tokens, 3u);
    auto tokens = dataset->Sample(i)->Tokens();
    ASSERT_TRUE(tokens.ok());
    EXPECT_EQ(std::vector<int32_t>(tokens->begin(), tokens->end()),
              (std::vector<int32_t>{int(i), int(i) + 1, int(i) + 2}));
    for (size_t k = 0; k < sample.media.size(); ++k) {
      EXPECT_EQ(sample.media[k].path, inputs[i].media[k].path);
      EXPECT_EQ(dataset->Sample(i)->media()[k].width, inputs[i].media[k].width);
      auto bytes = dataset->Sample(i)->Media(k);
      ASSERT_TRUE(bytes.ok());
      EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()),
                media_bytes[i][k]);
    }
  }
  EXPECT_TRUE(dataset->Sample(4)->meta().flags & kSampleHasMediaWithoutData);
  EXPECT_EQ(dataset->Sample(10).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(dataset->Sample(0)->Media(0).status().code(), StatusCode::kOutOfRange);
}

// A dataset of `shards` shards of 3 samples each, one image each.
std::string ManyShards(const std::string& name, int shards) {
  std::string dir = TempDir(name);
  Manifest manifest;
  manifest.tokenizer = "stand-in";
  manifest.vision = "qwen2-vl";
  manifest.chat_template = "{}";
  for (int shard = 0; shard < shards; ++shard) {
    ShardWriter writer(dir, fmt::format("src/{:05}", shard), "src");
    for (int i = 0; i < 3; ++i) {
      const int global = 3 * shard + i;
      const std::string bytes(100 + global, static_cast<char>('a' + global % 26));
      const std::vector<uint32_t> positions = {3};
      EXPECT_TRUE(writer
                      .Add(MakeSample(global, 1), {{bytes, 1}},
                           std::vector<int32_t>{global, global + 1, global + 2}, positions)
                      .ok());
    }
    auto info = writer.Finish();
    EXPECT_TRUE(info.ok());
    manifest.shards.push_back(*info);
  }
  EXPECT_TRUE(WriteManifest(dir, manifest).ok());
  return dir;
}

// The process's memory mappings (lines of /proc/self/maps).
size_t Mappings() {
  std::ifstream maps("/proc/self/maps");
  size_t lines = 0;
  for (std::string line; std::getline(maps, line);) ++lines;
  return lines;
}

TEST(ShardTest, DatasetHoldsAtMostItsOpenShardsAndAHeldSampleStaysReadable) {
  const std::string dir = ManyShards("bounded", 8);
  auto all = Dataset::Open(dir);
  auto bounded = Dataset::Open(dir, /*open_shards=*/2);
  ASSERT_TRUE(all.ok() && bounded.ok());
  EXPECT_EQ(bounded->open_shards(), 0u);  // Open maps no shard
  auto first = bounded->Sample(0);
  ASSERT_TRUE(first.ok());
  auto first_line = first->Line();
  auto first_media = first->Media(0);
  ASSERT_TRUE(first_line.ok() && first_media.ok());
  // Every sample, shard after shard and back: the bounded dataset reads what the other does.
  for (int pass = 0; pass < 2; ++pass) {
    for (uint64_t k = 0; k < bounded->num_samples(); ++k) {
      const uint64_t i = pass == 0 ? k : bounded->num_samples() - 1 - k;
      auto a = all->Sample(i), b = bounded->Sample(i);
      ASSERT_TRUE(a.ok() && b.ok()) << b.status().ToString();
      EXPECT_EQ(*a->Line(), *b->Line());
      EXPECT_TRUE(std::ranges::equal(*a->Tokens(), *b->Tokens()));
      EXPECT_TRUE(std::ranges::equal(*a->Media(0), *b->Media(0)));
      EXPECT_LE(bounded->open_shards(), 2u);
    }
  }
  EXPECT_EQ(all->open_shards(), 8u);
  // Shard 0 was closed by the cache long ago; the sample held it open.
  EXPECT_EQ(*first_line, *all->Sample(0)->Line());
  EXPECT_TRUE(std::ranges::equal(*first_media, *all->Sample(0)->Media(0)));
  // Closed shards are unmapped: reading every sample again maps no more than 2 shards' files
  // (5 each) at once.
  all = Status::Internal("closed");
  first = Status::Internal("released");
  const size_t before = Mappings();
  for (uint64_t i = 0; i < bounded->num_samples(); ++i) {
    ASSERT_TRUE(bounded->Sample(i)->Line().ok());
    EXPECT_LE(Mappings(), before + 2 * 5);
  }
}

TEST(ShardTest, ABadMetaIsFoundWhenItsShardIsFirstReadNamingIt) {
  const std::string dir = ManyShards("badmeta", 3);
  // Shard 1's .meta from shard 0's of another dataset with 2 samples a shard: it disagrees
  // with the shard table's counts.
  {
    const std::string other = TempDir("badmeta_other");
    ShardWriter writer(other, "src/00000", "src");
    ASSERT_TRUE(writer.Add(MakeSample(0, 0), {}, std::vector<int32_t>{1}, {}).ok());
    auto info = writer.Finish();
    ASSERT_TRUE(info.ok());
    fs::copy_file(other + "/src/00000.meta", dir + "/src/00001.meta",
                  fs::copy_options::overwrite_existing);
  }
  auto dataset = Dataset::Open(dir);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  EXPECT_TRUE(dataset->Sample(2).ok());
  auto bad = dataset->Sample(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(bad.status().message().find(dir + "/src/00001.meta"), std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(dataset->MetaOf(1).ok());
  EXPECT_TRUE(dataset->Sample(6).ok());  // the other shards still read
}

TEST(ShardTest, NoManifestMeansNoDataset) {
  std::string dir = TempDir("nomanifest");
  ShardWriter writer(dir, "s/00000", "s");
  ASSERT_TRUE(writer.Add(MakeSample(0, 0), {}, std::vector<int32_t>{1, 2, 3}, {}).ok());
  ASSERT_TRUE(writer.Finish().ok());
  auto dataset = Dataset::Open(dir);
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(dataset.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace mmpt::store
