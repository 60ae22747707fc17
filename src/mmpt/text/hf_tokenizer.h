#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/text/added_tokens.h"
#include "mmpt/text/bpe_model.h"
#include "mmpt/text/normalizer.h"
#include "mmpt/text/pre_tokenizer.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::text {

/// A Hugging Face byte-level BPE tokenizer (`tokenizer.json`): added tokens, normalizer,
/// pre-tokenizer, BPE model and ByteLevel decoder. Encode gives the ids of the reference's
/// plain `encode(text)` for post-processors that add nothing (ByteLevel), i.e. it never adds
/// BOS/EOS; see docs/tokenizer.md.
/// Thread safety: all const methods are safe to call concurrently; each thread keeps its own
/// word cache.
class HfTokenizer final : public Tokenizer {
 public:
  /// Parse the contents of a `tokenizer.json`; `source` names it in errors. Errors: Corrupt
  /// (malformed JSON or a field of the wrong type, naming the field), InvalidArgument (an
  /// unsupported component, naming it).
  static Result<std::unique_ptr<HfTokenizer>> Parse(std::string_view json,
                                                    const std::string& source);

  Result<std::vector<TokenId>> Encode(std::string_view text) const override;
  Result<size_t> Count(std::string_view text) const override;
  Result<std::string> Decode(const std::vector<TokenId>& ids) const override;
  std::optional<TokenId> TokenToId(std::string_view token) const override;
  size_t vocab_size() const override { return decode_table_.size(); }
  bool StartsWithAddedToken(std::string_view text) const override;
  bool EndsWithAddedToken(std::string_view text) const override;

  /// Append the ids of `text` to `out` (Encode without the allocation of a new vector).
  Status EncodeInto(std::string_view text, std::vector<TokenId>* out) const;

 private:
  HfTokenizer();
  Status EncodeSection(std::string_view section, std::vector<TokenId>* out) const;
  Status EncodeWord(std::string_view word, std::vector<TokenId>* out) const;

  uint64_t instance_id_;  // keys the per-thread word cache
  std::vector<AddedToken> added_;
  std::unique_ptr<AddedTokenMatcher> matcher_;
  std::unordered_map<std::string, TokenId> added_ids_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  BpeModel model_;
  std::vector<const std::string*> decode_table_;  // id → bytes it decodes to (null: no token)
};

}  // namespace mmpt::text
