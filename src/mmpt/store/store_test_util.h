#pragma once

// Helpers shared by the store's tests: a stand-in tokenizer and temporary directories.

#include <filesystem>
#include <string>

#include "mmpt/core/hash.h"
#include "mmpt/core/temp_dir_test_util.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::store::testing {

/// A tokenizer for tests: one id per space-separated word (its hash mod 50000), so token
/// counts are predictable. Decode is not supported.
class WordTokenizer : public text::Tokenizer {
 public:
  Result<std::vector<text::TokenId>> Encode(std::string_view text) const override {
    std::vector<text::TokenId> ids;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find(' ', pos);
      if (end == std::string_view::npos) end = text.size();
      if (end > pos)
        ids.push_back(static_cast<text::TokenId>(Hash64(text.substr(pos, end - pos)) % 50000));
      pos = end + 1;
    }
    return ids;
  }
  Result<std::string> Decode(const std::vector<text::TokenId>&) const override {
    return Status::InvalidArgument("WordTokenizer cannot decode");
  }
  /// Special tokens of a chat template ("<|image_pad|>", ...) exist, with their word's id.
  std::optional<text::TokenId> TokenToId(std::string_view token) const override {
    if (!token.starts_with("<|") || !token.ends_with("|>")) return std::nullopt;
    return static_cast<text::TokenId>(Hash64(token) % 50000);
  }
  size_t vocab_size() const override { return 50000; }
};

using test_util::FreshDir;

}  // namespace mmpt::store::testing
