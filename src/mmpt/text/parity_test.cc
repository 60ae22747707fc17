// Token-exact parity with the reference implementation, @lenml/tokenizers under Node.js, on the
// default (Qwen3) tokenizer.json: the hand-made hard set, invalid UTF-8, and the real corpora
// (a subset in the unit tier, all of them in the slow tier).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/corpora/text_corpus.h"
#include "mmpt/text/normalizer.h"
#include "mmpt/text/tokenizer.h"
#include "mmpt/text/utf8.h"

namespace mmpt::text {

using namespace mmpt::corpora;  // the real data and the generated corpus
namespace {

const std::string kRoot = MMPT_SOURCE_DIR;

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v =
        (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = uint8_t(bytes[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// Ids from the reference for every text (any bytes; ill-formed UTF-8 travels as base64 and Node
// decodes it with U+FFFD replacement). Fails the test if Node or the npm packages are missing.
std::vector<std::vector<TokenId>> ReferenceIds(const std::vector<std::string>& texts) {
  static int calls = 0;
  const std::filesystem::path dir = test_util::FreshDir("parity_" + std::to_string(calls++));
  const std::string in = (dir / "in.jsonl").string(), out = (dir / "out.jsonl").string();
  {
    std::ofstream file(in, std::ios::binary);
    for (const std::string& text : texts) {
      if (IsValidUtf8(text)) {
        file << nlohmann::json(text).dump() << '\n';
      } else {
        file << nlohmann::json{{"base64", Base64(text)}}.dump() << '\n';
      }
    }
  }
  const std::string command = "node " + kRoot + "/tests/text/reference_tokenize.js --tokenizer '" +
                              FindTokenizer().ValueOrDie() + "' " + in + " " + out;
  const int rc = std::system(command.c_str());
  std::vector<std::vector<TokenId>> ids;
  if (rc != 0) {
    ADD_FAILURE() << "the reference tokenizer failed (exit " << rc << "): " << command
                  << "\n(needs `node` and the npm packages of scripts/install-deps.sh)";
  } else {
    std::ifstream file(out);
    std::string line;
    while (std::getline(file, line))
      ids.push_back(nlohmann::json::parse(line).get<std::vector<TokenId>>());
  }
  std::filesystem::remove_all(dir);
  return ids;
}

class ParityFixture {
 public:
  static const Tokenizer& Get() {
    static std::unique_ptr<Tokenizer> tokenizer = [] {
      auto loaded = LoadTokenizer(FindTokenizer().ValueOrDie());
      if (!loaded.ok()) {
        ADD_FAILURE() << loaded.status().ToString() << " (run scripts/install-deps.sh)";
        return std::unique_ptr<Tokenizer>();
      }
      return std::move(loaded).ValueOrDie();
    }();
    if (tokenizer == nullptr) std::abort();
    return *tokenizer;
  }
};

// The text Decode(Encode(text)) must give back: ill-formed UTF-8 replaced, then NFC (the Qwen3
// tokenizer's normalizer; e.g. "e" + U+0301 comes back as U+00E9).
std::string Expected(const std::string& text) {
  static const auto nfc = Normalizer::Create("NFC", {});
  std::string sanitized = SanitizeUtf8(text), normalized;
  auto changed = (*nfc)->Normalize(sanitized, &normalized);
  EXPECT_TRUE(changed.ok());
  return changed.ok() && *changed ? normalized : sanitized;
}

// Assert mmpt's ids equal the reference's for every text, and that decoding gives the text back
// (sanitized and normalized).
void ExpectParity(const std::vector<std::string>& texts, const std::string& what) {
  ASSERT_FALSE(texts.empty()) << what;
  const Tokenizer& tokenizer = ParityFixture::Get();
  const auto reference = ReferenceIds(texts);
  ASSERT_EQ(reference.size(), texts.size()) << what;
  size_t mismatches = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ids = tokenizer.Encode(texts[i]);
    ASSERT_TRUE(ids.ok()) << what << " #" << i << ": " << ids.status().ToString();
    if (*ids != reference[i] && ++mismatches <= 5) {
      ADD_FAILURE() << what << " #" << i << ": ids differ from the reference for "
                    << nlohmann::json(SanitizeUtf8(texts[i])).dump();
    }
    auto decoded = tokenizer.Decode(*ids);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, Expected(texts[i])) << what << " #" << i;
    auto count = tokenizer.Count(texts[i]);
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(*count, ids->size());
  }
  EXPECT_EQ(mismatches, 0u) << what << ": " << mismatches << " of " << texts.size()
                            << " texts differ";
}

std::vector<std::string> HardSet() {
  auto contents = ReadFileToString(kRoot + "/tests/cases/text/hard.jsonl");
  EXPECT_TRUE(contents.ok()) << contents.status().ToString();
  std::vector<std::string> texts;
  if (!contents.ok()) return texts;
  size_t pos = 0;
  while (pos < contents->size()) {
    size_t end = contents->find('\n', pos);
    if (end == std::string::npos) end = contents->size();
    if (end > pos)
      texts.push_back(nlohmann::json::parse(contents->substr(pos, end - pos)).get<std::string>());
    pos = end + 1;
  }
  return texts;
}

std::vector<std::string> InvalidUtf8Set() {
  return {"\xFF",
          "abc\xC3",
          "\xC3\x28 x",
          "caf\xE9 au lait",
          "\xF0\x9F\x98 smile",
          "\xED\xA0\x80 surrogate",
          "\xE0\x80\x80 overlong",
          "<|im_start|>\x80\x81<|im_end|>",
          "\xF4\x90\x80\x80 past max",
          std::string("nul\0\xFE", 5)};
}

std::vector<std::string> Captions() {
  auto coco = ReadCocoCaptions(RealDataPath(kCocoCaptionsFile));
  EXPECT_TRUE(coco.ok()) << coco.status().ToString()
                         << " (the real data under ../shared/data/real is required)";
  return coco.ok() ? coco->CaptionTexts() : std::vector<std::string>{};
}

// mmc4 document texts: sentences joined by a space and by a newline, and every sentence alone.
std::vector<std::string> Mmc4Texts(size_t max_documents) {
  auto documents = ReadMmc4Documents(RealDataPath(kMmc4DocsFile));
  EXPECT_TRUE(documents.ok()) << documents.status().ToString()
                              << " (the real data under ../shared/data/real is required)";
  std::vector<std::string> texts;
  if (!documents.ok()) return texts;
  for (size_t d = 0; d < documents->size() && d < max_documents; ++d) {
    const Mmc4Document& document = (*documents)[d];
    texts.insert(texts.end(), document.sentences.begin(), document.sentences.end());
    texts.push_back(document.JoinedText(" "));
    texts.push_back(document.JoinedText("\n"));
  }
  return texts;
}

TEST(ParityTest, HardSet) {
  const auto texts = HardSet();
  EXPECT_GE(texts.size(), 30u);
  ExpectParity(texts, "tests/cases/text/hard.jsonl");
}

TEST(ParityTest, InvalidUtf8IsReplacedLikeNode) { ExpectParity(InvalidUtf8Set(), "invalid UTF-8"); }

TEST(ParityTest, CorpusSample) {
  auto captions = Captions();
  captions.resize(std::min<size_t>(captions.size(), 500));
  auto texts = Mmc4Texts(3);
  texts.insert(texts.end(), captions.begin(), captions.end());
  ExpectParity(texts, "COCO captions and mmc4 sample");
}

TEST(ParityTest, SpecialTokensInsideText) {
  const Tokenizer& tokenizer = ParityFixture::Get();
  const auto im_start = tokenizer.TokenToId("<|im_start|>");
  const auto image_pad = tokenizer.TokenToId("<|image_pad|>");
  ASSERT_TRUE(im_start && image_pad);
  auto ids = tokenizer.Encode("<|im_start|>user<|image_pad|>");
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 3u);
  EXPECT_EQ((*ids)[0], *im_start);
  EXPECT_EQ((*ids)[2], *image_pad);
  EXPECT_EQ(tokenizer.vocab_size(), 151669u);
  EXPECT_FALSE(tokenizer.Decode({151669}).ok());
  EXPECT_FALSE(tokenizer.Decode({-1}).ok());
}

TEST(ParityTest, ConcurrentEncodeMatchesSerial) {
  const Tokenizer& tokenizer = ParityFixture::Get();
  auto texts = Captions();
  texts.resize(std::min<size_t>(texts.size(), 2000));
  for (const std::string& text : HardSet()) texts.push_back(text);
  std::vector<std::vector<TokenId>> serial;
  for (const std::string& text : texts) serial.push_back(*tokenizer.Encode(text));
  // Four threads encode every text in different orders; each thread keeps its own word cache.
  std::vector<size_t> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t k = 0; k < texts.size(); ++k) {
        const size_t i = (k * (2 * t + 1) + t) % texts.size();
        auto ids = tokenizer.Encode(texts[i]);
        if (!ids.ok() || *ids != serial[i]) ++mismatches[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (size_t t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0u) << "thread " << t;
}

TEST(ParitySlow, AllCocoCaptions) { ExpectParity(Captions(), "COCO captions"); }

TEST(ParitySlow, AllMmc4Documents) { ExpectParity(Mmc4Texts(SIZE_MAX), "mmc4 documents"); }

}  // namespace
}  // namespace mmpt::text
