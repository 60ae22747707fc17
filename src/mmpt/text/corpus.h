#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::text {

/// Generate `count` English-like texts (words, punctuation, digits, some non-Latin scripts),
/// deterministic in `seed`: the corpus the demo uses when the real data is absent (real_data.h reads the real one).
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

/// Encode every text `rounds` times on the calling thread and time it (after one untimed warm-up
/// round, so word caches are as warm as a long run's). Errors: the first Encode error.
Result<TokenizeStats> MeasureTokenize(const Tokenizer& tokenizer, const std::vector<std::string>& texts,
                                      int rounds);

}  // namespace mmpt::text
