// The real-data reader on the real files (failing, not skipping, when they are absent) and on
// damaged copies, whose errors must name the file and the record at fault.
#include "mmpt/corpora/real_data.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/temp_dir_test_util.h"

namespace mmpt::corpora {

namespace {

std::string TempFile(const std::string& name, const std::string& contents) {
  const std::string path = test_util::TempPath(name);
  EXPECT_TRUE(WriteFileAtomic(path, contents).ok());
  return path;
}

// The status message, or "" when it is OK.
template <typename T>
std::string ErrorOf(const Result<T>& result) {
  return result.ok() ? "" : result.status().message();
}

TEST(RealDataTest, ReadsTheRealCocoFileInFileOrder) {
  auto coco = ReadCocoCaptions(RealDataPath(kCocoCaptionsFile));
  ASSERT_TRUE(coco.ok()) << coco.status().ToString();
  ASSERT_EQ(coco->images.size(), 5000u);
  ASSERT_EQ(coco->captions.size(), 25014u);
  const CocoImage& first = coco->images[0];
  EXPECT_GT(first.id, 0u);
  EXPECT_EQ(first.file_name, fmt::format("{:012}.jpg", first.id));
  for (const CocoImage& image : coco->images) {
    ASSERT_GT(image.width, 0u);
    ASSERT_LE(std::max(image.width, image.height), 640u) << image.file_name;
  }
  // Every image has a caption; the first caption of each image points back at it.
  const std::vector<size_t> first_caption = coco->FirstCaptionOfEachImage();
  for (size_t i = 0; i < first_caption.size(); ++i) {
    ASSERT_NE(first_caption[i], CocoCaptions::kNoCaption) << "image " << i;
    ASSERT_EQ(coco->captions[first_caption[i]].image, i);
    for (size_t k = 0; k < first_caption[i]; ++k) ASSERT_NE(coco->captions[k].image, i);
  }
  const std::vector<std::string> texts = coco->CaptionTexts();
  ASSERT_EQ(texts.size(), coco->captions.size());
  EXPECT_EQ(texts[777], coco->captions[777].text);
  EXPECT_FALSE(texts[0].empty());
}

TEST(RealDataTest, ReadsTheRealMmc4FileInFileOrder) {
  auto docs = ReadMmc4Documents(RealDataPath(kMmc4DocsFile));
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 107u);
  for (size_t d = 0; d < docs->size(); ++d) {
    const Mmc4Document& doc = (*docs)[d];
    EXPECT_EQ(doc.line, d + 1);
    EXPECT_GE(doc.images.size(), 2u);
    EXPECT_LE(doc.images.size(), 12u);
    for (const Mmc4Image& image : doc.images) {
      ASSERT_LT(image.matched_text_index, doc.sentences.size());
    }
  }
}

TEST(RealDataTest, CocoErrorsNameTheFileAndRecord) {
  EXPECT_EQ(ReadCocoCaptions("/nonexistent/coco.json").status().code(), StatusCode::kNotFound);
  const std::string images = R"("images": [{"id": 7, "width": 640, "height": 480}])";
  struct Case {
    std::string json, message;
  };
  const Case cases[] = {
      {"{\"images\": [", "malformed JSON"},
      {R"({"images": []})", "not COCO captions"},
      {R"({"images": [], "annotations": []})", "no images"},
      {R"({"images": [{"id": 7, "width": 0, "height": 4}], "annotations": []})", "images[0]"},
      {R"({"images": [{"id": 7, "width": 5, "height": 4, "file_name": 3}], "annotations": []})",
       "images[0]: file_name"},
      {R"({"images": [{"id": 7, "width": 5, "height": 4}, {"id": 7, "width": 5, "height": 4}],
           "annotations": []})",
       "images[1]: id 7 repeats images[0]"},
      {"{" + images + R"(, "annotations": [{"image_id": 7, "caption": "a"}, {"image_id": 7}]})",
       "annotations[1]"},
      {"{" + images + R"(, "annotations": [{"image_id": 8, "caption": "a"}]})",
       "annotations[0]: image_id 8"},
  };
  for (const Case& c : cases) {
    const std::string path = TempFile("coco.json", c.json);
    auto coco = ReadCocoCaptions(path);
    EXPECT_EQ(coco.status().code(), StatusCode::kCorrupt) << c.json;
    EXPECT_NE(ErrorOf(coco).find(path + ": " + c.message), std::string::npos) << ErrorOf(coco);
  }
  auto ok = ReadCocoCaptions(TempFile(
      "coco.json", "{" + images + R"(, "annotations": [{"image_id": 7, "caption": "a cat"}]})"));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->images[0].file_name, "");
  EXPECT_EQ(ok->images[0].width, 640u);
  EXPECT_EQ(ok->captions[0].text, "a cat");
}

TEST(RealDataTest, Mmc4ErrorsNameTheFileAndLine) {
  const std::string good =
      R"({"text_list": ["a", "b"], "image_info": [{"matched_text_index": 1}]})";
  const std::pair<std::string, std::string> cases[] = {
      {good + "\n{\"text_list\": [", ":2: malformed JSON"},
      {good + "\n\n" + R"({"image_info": []})", ":3: no \"text_list\""},
      {R"({"text_list": ["a", 2], "image_info": []})", ":1: text_list[1]"},
      {R"({"text_list": ["a"]})", ":1: no \"image_info\""},
      {R"({"text_list": ["a"], "image_info": [{"matched_text_index": 1}]})",
       ":1: image_info[0]: matched_text_index"},
  };
  for (const auto& [jsonl, message] : cases) {
    const std::string path = TempFile("mmc4.jsonl", jsonl);
    auto docs = ReadMmc4Documents(path);
    EXPECT_EQ(docs.status().code(), StatusCode::kCorrupt) << jsonl;
    EXPECT_NE(ErrorOf(docs).find(path + message), std::string::npos) << ErrorOf(docs);
  }
  auto docs = ReadMmc4Documents(TempFile("mmc4.jsonl", "\n" + good + "\n"));
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_EQ((*docs)[0].line, 2u);
  EXPECT_EQ((*docs)[0].sentences, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ((*docs)[0].images.size(), 1u);
  EXPECT_EQ((*docs)[0].images[0].matched_text_index, 1u);
  EXPECT_EQ((*docs)[0].JoinedText(), "a b");
  EXPECT_EQ((*docs)[0].JoinedText("\n"), "a\nb");
}

// The values bench/vision_dp_bench.py's mmc4_coco_image gives (its Python copy of the rule).
TEST(RealDataTest, Mmc4CocoImageIsTheSharedSeededRule) {
  EXPECT_EQ(Mmc4CocoImage(1, 0, 0, 5000), 2430u);
  EXPECT_EQ(Mmc4CocoImage(1, 3, 2, 5000), 702u);
  EXPECT_EQ(Mmc4CocoImage(0, 106, 11, 5000), 4474u);
  EXPECT_LT(Mmc4CocoImage(9, 1, 1, 3), 3u);
}

}  // namespace
}  // namespace mmpt::corpora
