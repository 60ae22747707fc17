#include "mmpt/store/planning_table.h"
#include "mmpt/ingest/metadata_jsonl.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/ingest/merge.h"
#include "mmpt/ingest/prepare.h"
#include "mmpt/store/meta.h"
#include "mmpt/store/store_test_util.h"

namespace mmpt::ingest {
namespace {

namespace fs = std::filesystem;

class PlanningTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_util::FreshDir(std::string("planning_table_") +
                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
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
  std::string b = Write("web.jsonl",
                        "{\"source\": \"coco\", \"text_tokens\": 3}\n"
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

TEST_F(PlanningTableTest, MetadataJsonlCarriesVideosAndAudio) {
  std::string path = Write("omni.jsonl",
                           "{\"text_tokens\": 30, \"videos\": [{\"width\": 640, \"height\": 360, "
                           "\"duration\": 4.5, \"fps\": 29.97}]}\n"
                           "{\"text_tokens\": 8}\n"
                           "{\"text_tokens\": 20, \"audios\": [{\"duration\": 2.5, "
                           "\"sample_rate\": 44100}, {\"duration\": 1, \"sample_rate\": 16000}], "
                           "\"images\": [{\"width\": 28, \"height\": 28}]}\n");
  auto table = ReadMetadataJsonl({path});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->num_videos(), 1u);
  ASSERT_EQ(table->num_audios(), 2u);
  ASSERT_EQ(table->VideosOf(0).size(), 1u);
  const cost::VideoItem& video = table->VideosOf(0)[0];
  EXPECT_EQ(video.width, 640u);
  EXPECT_EQ(video.height, 360u);
  EXPECT_EQ(video.frames, 135u);  // round(4.5 s × 29.97 fps)
  EXPECT_EQ(video.fps_milli, 29970u);
  EXPECT_EQ(video.text_position, 15u);  // mid-sample, as an image would be
  EXPECT_TRUE(table->VideosOf(1).empty());
  EXPECT_TRUE(table->AudiosOf(0).empty());
  ASSERT_EQ(table->AudiosOf(2).size(), 2u);
  EXPECT_EQ(table->AudiosOf(2)[0].samples, 40000u);  // 2.5 s at 16 kHz
  EXPECT_EQ(table->AudiosOf(2)[0].sample_rate_hz, 44100u);
  EXPECT_EQ(table->AudiosOf(2)[1].samples, 16000u);
  EXPECT_EQ(table->AudiosOf(2)[0].text_position, 6u);  // two clips in 20 tokens: 6, 12
  EXPECT_EQ(table->AudiosOf(2)[1].text_position, 12u);
  EXPECT_EQ(table->ImagesOf(2).size(), 1u);

  // An image-only table keeps no video or audio ranges.
  std::string images = Write("images.jsonl", "{\"text_tokens\": 3, \"image_sizes\": [[28, 28]]}\n");
  auto image_only = ReadMetadataJsonl({images});
  ASSERT_TRUE(image_only.ok());
  EXPECT_TRUE(image_only->video_rows.empty());
  EXPECT_TRUE(image_only->audio_rows.empty());
  EXPECT_TRUE(image_only->VideosOf(0).empty());
}

TEST_F(PlanningTableTest, BadVideoAndAudioFieldsAreNamedByFileAndLine) {
  struct Bad {
    std::string text;
    std::string want;
  } cases[] = {
      {"{\"text_tokens\": 5}\n{\"text_tokens\": 5, \"videos\": [{\"width\": 64, \"height\": 64, "
       "\"duration\": 2}]}\n",
       "av.jsonl:2: videos[0].fps must be a positive number"},
      {"{\"text_tokens\": 5, \"videos\": [{\"width\": 0, \"height\": 64, \"duration\": 2, "
       "\"fps\": 30}]}\n",
       "av.jsonl:1: videos[0].width must be a positive number"},
      {"{\"text_tokens\": 5, \"videos\": [{\"width\": 6.5, \"height\": 64, \"duration\": 2, "
       "\"fps\": 30}]}\n",
       "width and height must be integers"},
      {"{\"text_tokens\": 5, \"videos\": [{\"width\": 64, \"height\": 64, \"duration\": 0.01, "
       "\"fps\": 30}]}\n",
       "av.jsonl:1: video 0 has 0 frames"},
      {"{\"text_tokens\": 5, \"videos\": {\"width\": 64}}\n", "'videos' must be an array"},
      {"{\"text_tokens\": 5, \"audios\": [{\"duration\": -1, \"sample_rate\": 16000}]}\n",
       "av.jsonl:1: audios[0].duration must be a positive number"},
      {"{\"text_tokens\": 5, \"audios\": [{\"duration\": 1e9, \"sample_rate\": 16000}]}\n",
       "audios[0].duration must be a positive number (at most 360000)"},
      {"{\"text_tokens\": 5, \"audios\": [{\"duration\": 1}]}\n",
       "audios[0].sample_rate must be a positive number"},
      {"{\"text_tokens\": 5, \"audios\": [3]}\n", "audios[0] must be an object"},
  };
  for (const Bad& bad : cases) {
    std::string path = Write("av.jsonl", bad.text);
    auto table = ReadMetadataJsonl({path});
    ASSERT_FALSE(table.ok()) << bad.text;
    EXPECT_NE(table.status().ToString().find(bad.want), std::string::npos)
        << table.status().ToString();
  }
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

  std::string chat =
      Write("chat.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}\n");
  table = ReadMetadataJsonl({chat});
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().ToString().find("a chat record"), std::string::npos)
      << table.status().ToString();
}

// Damaged metadata (valid lines with random bytes overwritten, and random text) either reads
// as a table that holds together, one sample per non-blank line, or is refused as Corrupt or
// InvalidArgument naming the file. Both outcomes occur.
TEST_F(PlanningTableTest, DamagedMetadataReadsWholeOrIsRefusedNamingTheFile) {
  std::mt19937 rng(1);
  const std::string alphabet = "{}[]\":,0123456789 \ntext_tokensimageswidthheight-";
  const std::string valid =
      R"({"source": "a", "text_tokens": 12, "images": [{"width": 640, "height": 480}]})"
      "\n"
      R"({"text_tokens": 9, "image_sizes": [[28, 28], [56, 28]]})"
      "\n";
  int read = 0, refused = 0;
  for (int k = 0; k < 600; ++k) {
    std::string text = valid;
    if (k % 2 == 0) {
      for (int i = 0; i < 2; ++i) text[rng() % text.size()] = alphabet[rng() % alphabet.size()];
    } else {
      text.clear();
      for (int i = 0; i < 120; ++i) text += alphabet[rng() % alphabet.size()];
    }
    const std::string path = Write("fuzz.jsonl", text);
    auto table = ReadMetadataJsonl({path});
    if (!table.ok()) {
      ++refused;
      EXPECT_TRUE(table.status().code() == StatusCode::kCorrupt ||
                  table.status().code() == StatusCode::kInvalidArgument)
          << table.status().ToString();
      EXPECT_NE(table.status().message().find(path), std::string::npos)
          << table.status().ToString();
      continue;
    }
    ++read;
    size_t lines = 0;
    for (size_t begin = 0; begin < text.size();) {
      size_t end = std::min(text.find('\n', begin), text.size());
      if (text.find_first_not_of(" \r\t", begin) < end) ++lines;
      begin = end + 1;
    }
    ASSERT_EQ(table->num_samples(), lines) << text;
    ASSERT_EQ(table->image_begin.size(), lines + 1);
    ASSERT_EQ(table->image_begin.back(), table->images.size());
    ASSERT_EQ(table->image_text_positions.size(), table->images.size());
    for (size_t r = 0; r < lines; ++r) {
      for (uint64_t i = table->image_begin[r]; i < table->image_begin[r + 1]; ++i) {
        EXPECT_LE(table->image_text_positions[i], table->text_tokens[r]) << text;
        EXPECT_GT(table->images[i].width, 0u) << text;
        EXPECT_GT(table->images[i].height, 0u) << text;
      }
    }
  }
  EXPECT_GT(read, 0);
  EXPECT_GT(refused, 0);
}

TEST_F(PlanningTableTest, MetadataWithoutPositionsSpreadsImagesInTheText) {
  std::string path =
      Write("m.jsonl", "{\"text_tokens\": 9, \"image_sizes\": [[28, 28], [28, 28]]}\n");
  auto table = ReadMetadataJsonl({path});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  // Three gaps of 3 text tokens around two images.
  EXPECT_EQ(
      std::vector<uint32_t>(table->image_text_positions.begin(), table->image_text_positions.end()),
      (std::vector<uint32_t>{3, 6}));
}

// Prepare metadata-only LLaVA records ("<image>" where the image sits) into `out`.
void PrepareLlava(const std::string& jsonl, const std::string& out, const std::string& source,
                  int first, int count) {
  {
    std::ofstream file(jsonl);
    for (int i = first; i < first + count; ++i) {
      file << "{\"id\": \"s" << i << "\", \"image\": {\"width\": " << 200 + i
           << ", \"height\": 300}, \"conversations\": [{\"from\": \"human\", \"value\": "
              "\"look at this picture "
           << i
           << " <image> what is it\"}, {\"from\": \"gpt\", "
              "\"value\": \"a thing\"}]}\n";
    }
  }
  static const store::testing::WordTokenizer tokenizer;
  PrepareOptions options;
  options.inputs = {{jsonl, source}};
  options.out_dir = out;
  options.tokenizer = &tokenizer;
  options.tokenizer_path = "word-tokenizer";
  options.samples_per_shard = 2;
  options.threads = 1;
  options.progress = false;
  options.on_error = ErrorPolicy::kFail;
  auto report = Prepare(options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
}

TEST_F(PlanningTableTest, MergedDatasetsPlanInManifestOrderIgnoringStrayFiles) {
  PrepareLlava((dir_ / "b.jsonl").string(), (dir_ / "pb").string(), "web", 10, 3);
  PrepareLlava((dir_ / "a.jsonl").string(), (dir_ / "pa").string(), "coco", 0, 5);
  ASSERT_TRUE(
      MergeDatasets((dir_ / "pm").string(), {(dir_ / "pb").string(), (dir_ / "pa").string()}).ok());
  // A stray table inside the merged dataset is no part of it.
  Write("pm/web/00099.meta", *ReadFileToString((dir_ / "pa/coco/00000.meta").string()));

  auto dataset = store::Dataset::Open((dir_ / "pm").string());
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
      EXPECT_EQ(dataset->Sample(*global)->meta().text_tokens, table->text_tokens[row]);
      ASSERT_EQ(table->ImagesOf(row).size(), 1u);
      EXPECT_EQ(table->ImagesOf(row)[0].width, dataset->Sample(*global)->media()[0].width);
      // The image follows the words before "<image>": the system and user text before it.
      EXPECT_EQ(table->image_text_positions[table->image_begin[row]],
                dataset->Sample(*global)->media()[0].text_position);
      EXPECT_GT(table->image_text_positions[table->image_begin[row]], 0u);
    }
  }
  EXPECT_EQ(table->ImagesOf(table->source_begin[1])[0].width, 200u);  // coco's first: s0
  EXPECT_EQ(dataset->GlobalIndex(2, 0).status().code(), StatusCode::kOutOfRange);
}

TEST_F(PlanningTableTest, MetaTablesCarryVideosAndAudio) {
  PrepareLlava((dir_ / "a.jsonl").string(), (dir_ / "pa").string(), "coco", 0, 2);
  // Rewrite the shard's table: sample 0's item becomes a video, sample 1's an audio clip.
  const std::string shard = (dir_ / "pa/coco/00000.meta").string();
  std::vector<store::SampleMeta> samples;
  std::vector<store::MediaMeta> media;
  uint64_t num_tokens = 0;
  {
    auto meta = store::MetaTable::Open(shard);
    ASSERT_TRUE(meta.ok()) << meta.status().ToString();
    ASSERT_EQ(meta->num_samples(), 2u);
    ASSERT_EQ(meta->num_media(), 2u);
    samples.assign(meta->samples().begin(), meta->samples().end());
    media.assign(meta->media().begin(), meta->media().end());
    num_tokens = meta->num_tokens();
  }
  media[0].kind = store::MediaKind::kVideo;
  media[0].frames = 120;
  media[0].fps_milli = 30000;
  media[0].duration_ms = 4000;
  media[1].kind = store::MediaKind::kAudio;
  media[1].width = media[1].height = 0;
  media[1].duration_ms = 2500;
  media[1].frames = 39997;  // its decoded samples, which the plan follows (not the duration)
  media[1].sample_rate_hz = 22050;
  Write("pa/coco/00000.meta", store::EncodeMeta(samples, media, num_tokens));
  // The planning table prepare wrote is of the old records: written again from the new ones.
  auto manifest = store::ReadManifest((dir_ / "pa").string());
  ASSERT_TRUE(manifest.ok());
  ASSERT_TRUE(store::FinishDataset((dir_ / "pa").string(), *manifest).ok());

  auto table = ReadPlanningTable((dir_ / "pa").string());
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->num_samples(), 2u);
  EXPECT_EQ(table->num_images(), 0u);
  ASSERT_EQ(table->VideosOf(0).size(), 1u);
  EXPECT_TRUE(table->AudiosOf(0).empty());
  const cost::VideoItem& video = table->VideosOf(0)[0];
  EXPECT_EQ(video.width, 200u);
  EXPECT_EQ(video.height, 300u);
  EXPECT_EQ(video.frames, 120u);
  EXPECT_EQ(video.fps_milli, 30000u);
  EXPECT_EQ(video.text_position, media[0].text_position);
  ASSERT_EQ(table->AudiosOf(1).size(), 1u);
  EXPECT_TRUE(table->VideosOf(1).empty());
  EXPECT_EQ(table->AudiosOf(1)[0].samples, 39997u);
  EXPECT_EQ(table->AudiosOf(1)[0].sample_rate_hz, 22050u);
  EXPECT_EQ(table->AudiosOf(1)[0].text_position, media[1].text_position);

  // A video record without a frame rate is refused, naming the table and record.
  media[0].fps_milli = 0;
  Write("pa/coco/00000.meta", store::EncodeMeta(samples, media, num_tokens));
  const Status bad = store::FinishDataset((dir_ / "pa").string(), *manifest);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.ToString().find("00000.meta: media record 0"), std::string::npos) << bad.ToString();
}

// The planning table prepare writes: mapped from mmpt.plan, the bytes the .meta tables make.
// Damage is named (truncated, foreign, changed, disagreeing with the manifest) and nothing is
// written beside the dataset; one prepared before mmpt.plan opens as it is, and FinishDataset
// (`mmpt index`) converts it.
TEST_F(PlanningTableTest, PlanningFileIsMappedCheckedAndConverted) {
  const std::string ds = (dir_ / "pa").string(), plan = ds + "/mmpt.plan";
  PrepareLlava((dir_ / "a.jsonl").string(), ds, "coco", 0, 5);
  auto manifest = store::ReadManifest(ds);
  ASSERT_TRUE(manifest.ok() && manifest->planning);
  auto dataset = store::Dataset::Open(ds);
  ASSERT_TRUE(dataset.ok());
  auto built = store::BuildPlanningTable(*dataset);
  auto mapped = store::OpenPlanningTable(ds);
  ASSERT_TRUE(built.ok() && mapped.ok()) << mapped.status().ToString();
  EXPECT_EQ(mapped->origin(), plan);
  EXPECT_TRUE(std::ranges::equal(mapped->bytes(), built->bytes()));
  EXPECT_TRUE(mapped->Validate().ok());
  // Two opens at once both succeed and see the same bytes.
  auto again = store::OpenPlanningTable(ds);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(std::ranges::equal(again->bytes(), mapped->bytes()));

  auto listing = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::recursive_directory_iterator(ds)) names.push_back(e.path().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  const auto files = listing();
  const std::string good = *ReadFileToString(plan);
  auto refused = [&](const std::string& bytes, const std::string& what) {
    Write("pa/mmpt.plan", bytes);
    auto table = store::OpenPlanningTable(ds);
    ASSERT_FALSE(table.ok()) << what;
    EXPECT_EQ(table.status().code(), StatusCode::kCorrupt) << what;
    EXPECT_NE(table.status().message().find(plan), std::string::npos) << table.status().ToString();
    EXPECT_NE(table.status().message().find(what), std::string::npos) << table.status().ToString();
  };
  refused(good.substr(0, good.size() - 8), "truncated");
  refused(good.substr(0, 40), "not an mmpt planning table");
  refused(R"({"format": "something else"})", "not an mmpt planning table");
  std::string stale = good;  // another table's checksum in its header: not the manifest's
  stale[96] ^= 1;            // the header's data_xxh3
  refused(stale, "the manifest records");
  // A changed byte inside a section opens (in constant time, without reading the rows); the
  // row it damages is refused where it is read, and Validate (`mmpt verify`) finds any change.
  std::string changed = good;
  changed[good.size() - 20] ^= 1;
  Write("pa/mmpt.plan", changed);
  auto opened = store::OpenPlanningTable(ds);
  ASSERT_TRUE(opened.ok());
  EXPECT_NE(opened->Validate().ToString().find("checksum"), std::string::npos);
  EXPECT_EQ(listing(), files) << "nothing is written beside a dataset being read";
  Write("pa/mmpt.plan", good);
  store::Manifest fewer = *manifest;
  fewer.shards.back().samples -= 1;
  ASSERT_TRUE(store::WriteManifest(ds, fewer).ok());
  auto disagreeing = store::OpenPlanningTable(ds);
  ASSERT_FALSE(disagreeing.ok());
  EXPECT_NE(disagreeing.status().message().find("source 'coco' has 5 samples"), std::string::npos)
      << disagreeing.status().ToString();

  // A dataset prepared before mmpt.plan: read as it is, in memory, writing nothing.
  store::Manifest old = *manifest;
  old.planning.reset();
  ASSERT_TRUE(store::WriteManifest(ds, old).ok());
  fs::remove(plan);
  const auto old_files = listing();
  auto in_memory = store::OpenPlanningTable(ds);
  ASSERT_TRUE(in_memory.ok()) << in_memory.status().ToString();
  EXPECT_EQ(in_memory->origin(), "(in memory)");
  EXPECT_TRUE(std::ranges::equal(in_memory->bytes(), built->bytes()));
  EXPECT_EQ(listing(), old_files);
  // Converted once: the table, then the manifest naming it.
  ASSERT_TRUE(store::FinishDataset(ds, old).ok());
  auto converted = store::OpenPlanningTable(ds);
  ASSERT_TRUE(converted.ok());
  EXPECT_EQ(converted->origin(), plan);
  EXPECT_TRUE(std::ranges::equal(converted->bytes(), built->bytes()));
}

}  // namespace
}  // namespace mmpt::ingest
