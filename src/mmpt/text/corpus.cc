#include "mmpt/text/corpus.h"

#include <chrono>
#include <random>

#include <fmt/format.h>

#include "mmpt/core/mapped_file.h"
#include "mmpt/text/utf8.h"

namespace mmpt::text {

std::vector<std::string> GenerateCorpus(size_t count, uint64_t seed) {
  static const std::vector<std::string> kWords = {
      "a", "the", "man", "woman", "dog", "cat", "is", "sitting", "on", "in", "with", "of", "and",
      "riding", "standing", "next", "to", "table", "street", "kitchen", "pizza", "train", "two",
      "people", "playing", "frisbee", "bus", "parked", "large", "small", "white", "red", "it's",
      "they'll", "Tokyo", "café", "naïve", "東京", "猫", "개", "собака", "2017", "3.14", "🙂"};
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

Result<TokenizeStats> MeasureTokenize(const Tokenizer& tokenizer, const std::vector<std::string>& texts,
                                      int rounds) {
  TokenizeStats stats;
  for (const std::string& text : texts) {
    MMPT_ASSIGN_OR_RETURN(size_t count, tokenizer.Count(text));
    stats.tokens += count;
    stats.bytes += text.size();
  }
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < rounds; ++round) {
    for (const std::string& text : texts) {
      MMPT_ASSIGN_OR_RETURN(size_t count, tokenizer.Count(text));
      (void)count;
    }
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.texts = texts.size() * size_t(rounds);
  stats.tokens *= size_t(rounds);
  stats.bytes *= size_t(rounds);
  return stats;
}

}  // namespace mmpt::text
