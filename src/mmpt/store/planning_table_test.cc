#include "mmpt/store/planning_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "mmpt/core/mapped_file.h"
#include "mmpt/store/merge.h"
#include "mmpt/store/meta.h"
#include "mmpt/store/prepare.h"
#include "mmpt/store/store_test_util.h"

namespace mmpt::store {
namespace {

namespace fs = std::filesystem;

class PlanningTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mmpt_planning_table_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
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

TEST_F(PlanningTableTest, MetadataJsonlFillsTheTable) {
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

TEST_F(PlanningTableTest, BadLinesAreNamedByFileAndLine) {
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

TEST_F(PlanningTableTest, RawRecordsNameThePrepareCommandForEveryInput) {
  // Token counts of raw records come from prepare alone; the error gives its command line.
  std::string meta = Write("meta.jsonl", "{\"text_tokens\": 5}\n");
  std::string llava = Write("raw data/llava.jsonl",
                            "{\"text_tokens\": 5}\n"
                            "{\"image\": \"a.jpg\", \"conversations\": [{\"from\": \"human\", "
                            "\"value\": \"<image>\\nWhat?\"}, {\"from\": \"gpt\", \"value\": "
                            "\"A cat.\"}]}\n");
  auto table = ReadMetadataJsonl({llava, meta});
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kInvalidArgument);
  const std::string message = table.status().ToString();
  EXPECT_NE(message.find(llava + ":2: a llava record"), std::string::npos) << message;
  const std::string command = "mmpt prepare '" + llava + "' " + meta + " --out '" +
                              (dir_ / "raw data" / "llava-dataset").string() + "'";
  EXPECT_NE(message.find(command), std::string::npos) << message;

  std::string chat = Write("chat.jsonl",
                           "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}\n");
  table = ReadMetadataJsonl({chat});
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().ToString().find("a chat record"), std::string::npos)
      << table.status().ToString();
}

TEST_F(PlanningTableTest, RandomBytesNeverCrash) {
  std::mt19937 rng(1);
  const std::string alphabet = "{}[]\":,0123456789 \ntext_tokensimageswidthheight-";
  for (int k = 0; k < 300; ++k) {
    std::string text;
    for (int i = 0; i < 120; ++i) text += alphabet[rng() % alphabet.size()];
    std::string path = Write("fuzz.jsonl", text);
    (void)ReadMetadataJsonl({path});  // must return, ok or not
  }
}

TEST_F(PlanningTableTest, MetadataWithoutPositionsSpreadsImagesInTheText) {
  std::string path = Write("m.jsonl", "{\"text_tokens\": 9, \"image_sizes\": [[28, 28], [28, 28]]}\n");
  auto table = ReadMetadataJsonl({path});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  // Three gaps of 3 text tokens around two images.
  EXPECT_EQ(table->image_text_positions, (std::vector<uint32_t>{3, 6}));
}

// Prepare metadata-only LLaVA records ("<image>" where the image sits) into `out`.
void PrepareLlava(const std::string& jsonl, const std::string& out, const std::string& source,
                  int first, int count) {
  {
    std::ofstream file(jsonl);
    for (int i = first; i < first + count; ++i) {
      file << "{\"id\": \"s" << i << "\", \"image\": {\"width\": " << 200 + i
           << ", \"height\": 300}, \"conversations\": [{\"from\": \"human\", \"value\": "
              "\"look at this picture " << i << " <image> what is it\"}, {\"from\": \"gpt\", "
              "\"value\": \"a thing\"}]}\n";
    }
  }
  static const testing::WordTokenizer tokenizer;
  PrepareOptions options;
  options.inputs = {{jsonl, source}};
  options.out_dir = out;
  options.tokenizer = &tokenizer;
  options.tokenizer_path = "word-tokenizer";
  options.samples_per_shard = 2;
  options.jobs = 1;
  options.progress = false;
  options.on_error = ErrorPolicy::kFail;
  auto report = Prepare(options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
}

TEST_F(PlanningTableTest, MergedDatasetsPlanInManifestOrderIgnoringStrayFiles) {
  PrepareLlava((dir_ / "b.jsonl").string(), (dir_ / "pb").string(), "web", 10, 3);
  PrepareLlava((dir_ / "a.jsonl").string(), (dir_ / "pa").string(), "coco", 0, 5);
  ASSERT_TRUE(MergeDatasets((dir_ / "pm").string(),
                            {(dir_ / "pb").string(), (dir_ / "pa").string()}).ok());
  // A stray table inside the merged dataset is no part of it.
  Write("pm/web/00099.meta", *ReadFileToString((dir_ / "pa/coco/00000.meta").string()));

  auto dataset = Dataset::Open((dir_ / "pm").string());
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  auto table = ReadPlanningTable((dir_ / "pm").string());
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->num_samples(), 8u);
  EXPECT_EQ(table->source_names, (std::vector<std::string>{"web", "coco"}));
  for (uint32_t s = 0; s < table->num_sources(); ++s) {
    ASSERT_EQ(table->source_size(s), dataset->source_size(s));
    for (uint64_t i = 0; i < table->source_size(s); ++i) {
      const uint64_t row = table->source_begin[s] + i;
      auto global = dataset->GlobalIndex(s, i);
      ASSERT_TRUE(global.ok());
      EXPECT_EQ(dataset->meta(*global).text_tokens, table->text_tokens[row]);
      ASSERT_EQ(table->ImagesOf(row).size(), 1u);
      EXPECT_EQ(table->ImagesOf(row)[0].width, dataset->media_meta(*global)[0].width);
      // The image follows the words before "<image>": the system and user text before it.
      EXPECT_EQ(table->image_text_positions[table->image_begin[row]],
                dataset->media_meta(*global)[0].text_position);
      EXPECT_GT(table->image_text_positions[table->image_begin[row]], 0u);
    }
  }
  EXPECT_EQ(table->ImagesOf(table->source_begin[1])[0].width, 200u);  // coco's first: s0
  EXPECT_EQ(dataset->GlobalIndex(2, 0).status().code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace mmpt::store
