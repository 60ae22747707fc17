// SentencePiece behind the Tokenizer interface, on a tiny model trained at test time on COCO
// captions by the SentencePiece trainer.
#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::text {

using namespace mmpt::corpora;  // the real data and the generated corpus
namespace {

class SentencePieceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(test_util::FreshDir("spm"));
    auto captions = ReadCocoCaptions(RealDataPath(kCocoCaptionsFile));
    ASSERT_TRUE(captions.ok()) << captions.status().ToString()
                               << " (the real data under ../shared/data/real is required)";
    captions_ = new std::vector<std::string>();
    const std::string input = (*dir_ / "captions.txt").string();
    std::ofstream file(input);
    for (size_t i = 0; i < captions->captions.size() && i < 4000; ++i) {
      std::string caption = captions->captions[i].text;
      for (char& c : caption) c = (c == '\n' || c == '\r') ? ' ' : c;
      file << caption << '\n';
      captions_->push_back(caption);
    }
    file.close();
    const auto status = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + input + " --model_prefix=" + (*dir_ / "m").string() +
        " --vocab_size=600 --model_type=bpe --character_coverage=1.0 "
        "--normalization_rule_name=identity"
        " --remove_extra_whitespaces=false --minloglevel=2 --num_threads=1");
    ASSERT_TRUE(status.ok()) << status.ToString();
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete captions_;
  }
  static std::filesystem::path* dir_;
  static std::vector<std::string>* captions_;
};
std::filesystem::path* SentencePieceTest::dir_ = nullptr;
std::vector<std::string>* SentencePieceTest::captions_ = nullptr;

TEST_F(SentencePieceTest, EncodesAndDecodesCaptions) {
  auto tokenizer = LoadTokenizer((*dir_ / "m.model").string());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  EXPECT_EQ((*tokenizer)->vocab_size(), 600u);
  EXPECT_EQ((*tokenizer)->TokenToId("<unk>"), 0);
  EXPECT_EQ((*tokenizer)->TokenToId("no such piece"), std::nullopt);
  size_t tokens = 0, bytes = 0;
  for (const std::string& caption : *captions_) {
    auto ids = (*tokenizer)->Encode(caption);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    for (TokenId id : *ids) ASSERT_TRUE(id > 0 && id < 600) << caption;  // no unk: full coverage
    auto text = (*tokenizer)->Decode(*ids);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, caption);
    EXPECT_EQ(*(*tokenizer)->Count(caption), ids->size());
    tokens += ids->size();
    bytes += caption.size();
  }
  EXPECT_LT(tokens, bytes / 2);  // the merges learned from the captions compress them
  EXPECT_EQ((*tokenizer)->Decode({600}).status().code(), StatusCode::kOutOfRange);
  // Ill-formed UTF-8 is replaced by U+FFFD first, as for byte-level BPE (docs/tokenizer.md).
  auto invalid = (*tokenizer)->Encode("caf\xE9");
  auto replaced = (*tokenizer)->Encode("caf\xEF\xBF\xBD");
  ASSERT_TRUE(invalid.ok() && replaced.ok());
  EXPECT_EQ(*invalid, *replaced);
}

TEST_F(SentencePieceTest, GarbageModelIsCorrupt) {
  const std::string path = (*dir_ / "garbage.model").string();
  std::ofstream(path) << "\x01\x02 not a protobuf at all";
  auto tokenizer = LoadTokenizer(path);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_EQ(tokenizer.status().code(), StatusCode::kCorrupt) << tokenizer.status().ToString();
  EXPECT_EQ(LoadTokenizer((*dir_ / "missing.model").string()).status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace mmpt::text
