#include "mmpt/corpora/text_corpus.h"

#include <chrono>
#include <random>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

#include "mmpt/core/mapped_file.h"
#include "mmpt/text/utf8.h"

namespace mmpt::corpora {

using namespace mmpt::text;  // moved here from the text module

std::vector<std::string> GenerateCorpus(size_t count, uint64_t seed) {
  static const std::vector<std::string> kWords = {
      "a",      "the",     "man",   "woman", "dog",    "cat",      "is",      "sitting", "on",
      "in",     "with",    "of",    "and",   "riding", "standing", "next",    "to",      "table",
      "street", "kitchen", "pizza", "train", "two",    "people",   "playing", "frisbee", "bus",
      "parked", "large",   "small", "white", "red",    "it's",     "they'll", "Tokyo",   "café",
      "naïve",  "東京",    "猫",    "개",    "собака", "2017",     "3.14",    "🙂"};
  std::mt19937_64 rng(seed);
  std::vector<std::string> texts;
  texts.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    std::string text;
    const size_t words = 4 + rng() % 20;
    for (size_t w = 0; w < words; ++w) {
      if (w > 0) text += rng() % 17 == 0 ? ", " : " ";
      std::string word = kWords[rng() % kWords.size()];
      if (w == 0 && word[0] >= 'a' && word[0] <= 'z') word[0] = char(word[0] - 'a' + 'A');
      text += word;
    }
    text += rng() % 5 == 0 ? "!" : ".";
    texts.push_back(std::move(text));
  }
  return texts;
}

Status WriteTextsAsJsonLines(const std::vector<std::string>& texts, const std::string& path) {
  std::string out;
  for (const std::string& raw : texts) {
    const std::string text = SanitizeUtf8(raw);
    out += '"';
    for (char c : text) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
          } else {
            out += c;
          }
      }
    }
    out += "\"\n";
  }
  return WriteFileAtomic(path, out);
}

std::vector<std::string> DistinctTexts(const std::vector<std::string>& texts) {
  std::unordered_set<std::string_view> seen;
  std::vector<std::string> distinct;
  for (const std::string& text : texts) {
    if (seen.insert(text).second) distinct.push_back(text);
  }
  return distinct;
}

Result<TokenizeStats> MeasureTokenize(const Tokenizer& tokenizer,
                                      std::span<const std::string> warmup,
                                      std::span<const std::string> timed,
                                      std::vector<std::vector<TokenId>>* ids) {
  for (const std::string& text : warmup) MMPT_RETURN_IF_ERROR(tokenizer.Encode(text).status());
  std::vector<std::vector<TokenId>> encoded(timed.size());
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < timed.size(); ++i) {
    MMPT_ASSIGN_OR_RETURN(encoded[i], tokenizer.Encode(timed[i]));
  }
  TokenizeStats stats;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.texts = timed.size();
  for (size_t i = 0; i < timed.size(); ++i) {
    stats.tokens += encoded[i].size();
    stats.bytes += timed[i].size();
  }
  if (ids != nullptr) *ids = std::move(encoded);
  return stats;
}

}  // namespace mmpt::corpora
