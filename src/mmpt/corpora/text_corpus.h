#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::corpora {

/// Generate `count` English-like texts (words, punctuation, digits, some non-Latin scripts),
/// deterministic in `seed`: the corpus the demo uses when the real data is absent (real_data.h
/// reads the real one).
std::vector<std::string> GenerateCorpus(size_t count, uint64_t seed);

/// Write `texts` to `path` as JSON Lines, one JSON string per line (ill-formed UTF-8 replaced
/// by U+FFFD first): the input format of tests/text/reference_tokenize.js. Errors: IOError.
Status WriteTextsAsJsonLines(const std::vector<std::string>& texts, const std::string& path);

/// What tokenizing a corpus measured.
struct TokenizeStats {
  size_t texts = 0;
  size_t tokens = 0;
  size_t bytes = 0;
  double seconds = 0;
  double tokens_per_second() const { return seconds > 0 ? double(tokens) / seconds : 0; }
};

/// `texts` without repeats, in order of first appearance: what a throughput measurement should
/// encode, since a repeated text finds every one of its words in the tokenizer's word cache.
std::vector<std::string> DistinctTexts(const std::vector<std::string>& texts);

/// Encode each of `warmup` once, untimed (code and common words warm, as in a long run), then
/// each of `timed` once on the calling thread, timed. Pass distinct texts, none of `timed` in
/// `warmup`: re-encoding a text measures the word cache, not the tokenizer. `ids`, when given,
/// receives the ids of every timed text. Errors: the first Encode error.
Result<TokenizeStats> MeasureTokenize(const text::Tokenizer& tokenizer,
                                      std::span<const std::string> warmup,
                                      std::span<const std::string> timed,
                                      std::vector<std::vector<text::TokenId>>* ids = nullptr);

}  // namespace mmpt::corpora
