#include "mmpt/plan/corpus.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "mmpt/core/mapped_file.h"
#include "mmpt/store/meta.h"

namespace mmpt::plan {
namespace {

namespace fs = std::filesystem;

class CorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mmpt_corpus_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;  // no fsync: tests only
    return path;
  }
  fs::path dir_;
};

TEST_F(CorpusTest, MetadataJsonlFillsTheTable) {
  std::string a = Write("captions.jsonl",
                        "{\"source\": \"coco\", \"text_tokens\": 14, \"images\": [{\"width\": 640, "
                        "\"height\": 480}]}\n"
                        "\n"
                        "{\"text\": \"A dog runs on the beach.\", \"image_sizes\": [[320, 240], "
                        "[10, 20]], \"template_tokens\": 12}\n");
  std::string b = Write("web.jsonl", "{\"source\": \"coco\", \"text_tokens\": 3}\n"
                                     "{\"text_tokens\": 500}\n");
  auto table = ReadMetadataJsonl({a, b});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->num_sources(), 3u);  // coco, captions (file stem), web
  EXPECT_EQ(table->source_names[0], "coco");
  EXPECT_EQ(table->source_names[1], "captions");
  EXPECT_EQ(table->source_size(0), 2u);  // grouped by source across files
  EXPECT_EQ(table->text_tokens[0], 14u);
  EXPECT_EQ(table->text_tokens[1], 3u);
  // "A dog runs on the beach." ≈ 7 tokens, + 12 template tokens.
  EXPECT_GE(table->text_tokens[2], 17u);
  EXPECT_LE(table->text_tokens[2], 21u);
  EXPECT_EQ(table->ImagesOf(2).size(), 2u);
  EXPECT_EQ(table->ImagesOf(2)[1].height, 20u);
}

TEST_F(CorpusTest, BadLinesAreNamedByFileAndLine) {
  struct Bad {
    std::string text;
    std::string want;
  } cases[] = {
      {"{\"text_tokens\": 5}\n{\"text_tokens\": 0}\n", "bad.jsonl:2: sample has zero length"},
      {"{\"text_tokens\": 5}\nnot json\n", "bad.jsonl:2"},
      {"{\"images\": [{\"width\": 5, \"height\": 5}]}\n", "needs 'text_tokens' or 'text'"},
      {"{\"text_tokens\": -3}\n", "non-negative"},
      {"{\"text_tokens\": 3, \"images\": [{\"width\": 0, \"height\": 5}]}\n", "zero side"},
      {"{\"text_tokens\": 3, \"image_sizes\": [[1, 2, 3]]}\n", "[width, height]"},
      {"[1, 2]\n", "not a JSON object"},
      {"   \n\n", "no samples in"},
  };
  for (const Bad& bad : cases) {
    std::string path = Write("bad.jsonl", bad.text);
    auto table = ReadMetadataJsonl({path});
    ASSERT_FALSE(table.ok()) << bad.text;
    EXPECT_NE(table.status().ToString().find(bad.want), std::string::npos)
        << table.status().ToString();
  }
  EXPECT_EQ(ReadMetadataJsonl({(dir_ / "missing.jsonl").string()}).status().code(),
            StatusCode::kNotFound);
}

TEST_F(CorpusTest, RandomBytesNeverCrash) {
  std::mt19937 rng(1);
  const std::string alphabet = "{}[]\":,0123456789 \ntext_tokensimageswidthheight-";
  for (int k = 0; k < 300; ++k) {
    std::string text;
    for (int i = 0; i < 120; ++i) text += alphabet[rng() % alphabet.size()];
    std::string path = Write("fuzz.jsonl", text);
    (void)ReadMetadataJsonl({path});  // must return, ok or not
  }
}

TEST_F(CorpusTest, PreparedDatasetIsReadFromMetaTablesInShardOrder) {
  auto meta = [](std::vector<uint32_t> tokens, std::vector<uint16_t> media) {
    std::vector<store::SampleMeta> samples;
    std::vector<store::MediaMeta> items;
    uint64_t num_tokens = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
      store::SampleMeta s{};
      s.token_begin = num_tokens;
      s.text_tokens = tokens[i];
      num_tokens += tokens[i];
      s.media_begin = static_cast<uint32_t>(items.size());
      s.num_media = media[i];
      s.num_segments = 1 + media[i];
      for (uint16_t m = 0; m < media[i]; ++m) {
        store::MediaMeta mm{};
        mm.width = 100 + m;
        mm.height = 50;
        mm.frames = 1;
        items.push_back(mm);
      }
      samples.push_back(s);
    }
    return store::EncodeMeta(samples, items, num_tokens);
  };
  Write("ds/web/10.meta", meta({7}, {0}));
  Write("ds/web/2.meta", meta({5, 6}, {1, 2}));
  Write("ds/coco/0.meta", meta({9}, {1}));
  Write("ds/notes.txt", "not a source");
  auto table = ReadCorpus((dir_ / "ds").string());
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->num_sources(), 2u);
  EXPECT_EQ(table->source_names[0], "coco");
  EXPECT_EQ(table->source_names[1], "web");
  // web: shard 2 before shard 10.
  EXPECT_EQ(table->text_tokens, (std::vector<uint32_t>{9, 5, 6, 7}));
  EXPECT_EQ(table->ImagesOf(2).size(), 2u);
  EXPECT_EQ(table->ImagesOf(2)[1].width, 101u);

  Write("ds/coco/1.meta", meta({0}, {0}));
  auto zero = ReadCorpus((dir_ / "ds").string());
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().ToString().find("1.meta record 0"), std::string::npos)
      << zero.status().ToString();
  Write("ds/coco/1.meta", "garbage");
  EXPECT_EQ(ReadCorpus((dir_ / "ds").string()).status().code(), StatusCode::kCorrupt);
  fs::create_directories(dir_ / "empty");
  EXPECT_EQ(ReadCorpus((dir_ / "empty").string()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace mmpt::plan
