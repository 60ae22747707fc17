#include "mmpt/text/corpus.h"

#include <simdjson.h>

#include <chrono>
#include <random>

#include <fmt/format.h>

#include "mmpt/core/mapped_file.h"
#include "mmpt/text/utf8.h"

namespace mmpt::text {

Result<std::vector<std::string>> ReadCocoCaptions(const std::string& path) {
  MMPT_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(contents).get(root)) {
    return Status::Corrupt("{}: malformed JSON: {}", path, simdjson::error_message(error));
  }
  simdjson::dom::array annotations;
  if (root["annotations"].get(annotations)) return Status::Corrupt("{}: no \"annotations\" array", path);
  std::vector<std::string> captions;
  captions.reserve(annotations.size());
  size_t index = 0;
  for (simdjson::dom::element annotation : annotations) {
    std::string_view caption;
    if (annotation["caption"].get(caption)) return Status::Corrupt("{}: annotations[{}]: no string \"caption\"", path, index);
    captions.emplace_back(caption);
    ++index;
  }
  return captions;
}

Result<std::vector<std::vector<std::string>>> ReadMmc4TextLists(const std::string& path) {
  MMPT_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  std::vector<std::vector<std::string>> documents;
  simdjson::dom::parser parser;
  size_t line_number = 0, pos = 0;
  while (pos < contents.size()) {
    size_t end = contents.find('\n', pos);
    if (end == std::string::npos) end = contents.size();
    const std::string_view line = std::string_view(contents).substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    simdjson::dom::element doc;
    if (auto error = parser.parse(line.data(), line.size()).get(doc)) {
      return Status::Corrupt("{}:{}: malformed JSON: {}", path, line_number, simdjson::error_message(error));
    }
    simdjson::dom::array list;
    if (doc["text_list"].get(list)) return Status::Corrupt("{}:{}: no \"text_list\" array", path, line_number);
    std::vector<std::string> sentences;
    for (simdjson::dom::element item : list) {
      std::string_view sentence;
      if (item.get(sentence)) return Status::Corrupt("{}:{}: text_list holds a non-string", path, line_number);
      sentences.emplace_back(sentence);
    }
    documents.push_back(std::move(sentences));
  }
  return documents;
}

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
