#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::text {

/// The real corpora the demo, tests and benchmarks tokenize, relative to the project root.
inline constexpr const char* kCocoCaptionsPath = "../shared/data/real/coco_val2017_captions.json";
inline constexpr const char* kMmc4DocsPath = "../shared/data/real/mmc4_core_ff_docs.jsonl";

/// Read every `annotations[].caption` of a COCO captions file, in file order.
/// Errors: NotFound, Corrupt naming the file and the annotation at fault.
Result<std::vector<std::string>> ReadCocoCaptions(const std::string& path);

/// Read the `text_list` (sentences) of every document of an mmc4 JSONL file, in file order.
/// Errors: NotFound, Corrupt naming the file and line.
Result<std::vector<std::vector<std::string>>> ReadMmc4TextLists(const std::string& path);

/// Generate `count` English-like texts (words, punctuation, digits, some non-Latin scripts),
/// deterministic in `seed`: the corpus the demo uses when the real data is absent.
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
