#pragma once

// Helpers shared by the store's tests: a stand-in tokenizer and temporary directories.

#include <filesystem>
#include <string>

#include <unistd.h>

#include "mmpt/core/hash.h"
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

/// A fresh, empty directory under the system temp directory, private to this process (CTest
/// runs test cases as parallel processes, and cases may share a name).
inline std::string FreshDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("mmpt_store_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace mmpt::store::testing
