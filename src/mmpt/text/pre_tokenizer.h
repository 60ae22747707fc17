#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/text/regex.h"

namespace mmpt::text {

/// One piece of pre-tokenized text: the bytes [begin, end) of the section, preceded by a space
/// when `prefix_space` is set (ByteLevel's add_prefix_space adds it without copying the text).
struct Piece {
  uint32_t begin = 0;
  uint32_t end = 0;
  bool prefix_space = false;
};

/// How a Split stage treats the matches of its pattern (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

/// Parse "Removed", "Isolated", ... Errors: InvalidArgument naming an unknown behavior.
Result<SplitBehavior> ParseSplitBehavior(std::string_view name);

/// One Split pre-tokenizer: a regex (or a literal string), a behavior and `invert`.
struct SplitStage {
  Regex regex;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};

/// The `pre_tokenizer` of a byte-level BPE `tokenizer.json`: zero or more Split stages, then
/// ByteLevel (optionally adding a prefix space and splitting with the GPT-2 regex). Bytes are
/// not remapped here: the BPE model works on raw bytes, which is the same thing.
/// Thread safety: Run is const and safe to call concurrently.
class PreTokenizer {
 public:
  PreTokenizer(std::vector<SplitStage> splits, bool add_prefix_space,
               std::optional<Regex> byte_level_regex)
      : splits_(std::move(splits)),
        add_prefix_space_(add_prefix_space),
        byte_level_regex_(std::move(byte_level_regex)) {}

  /// The regex ByteLevel uses when `use_regex` is true (GPT-2's).
  static constexpr std::string_view kGpt2Pattern =
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

  /// Split `text` (valid UTF-8) into pieces, replacing the contents of `pieces`. `scratch` is
  /// reused between calls to avoid allocation. Errors: Internal from the regex engine.
  Status Run(std::string_view text, std::vector<Piece>* pieces, std::vector<Piece>* scratch) const;

 private:
  Status ApplySplit(const SplitStage& stage, std::string_view text, const std::vector<Piece>& in,
                    std::vector<Piece>* out) const;
  Status ApplyByteLevel(std::string_view text, const std::vector<Piece>& in,
                        std::vector<Piece>* out) const;

  std::vector<SplitStage> splits_;
  bool add_prefix_space_ = false;
  std::optional<Regex> byte_level_regex_;
};

}  // namespace mmpt::text
