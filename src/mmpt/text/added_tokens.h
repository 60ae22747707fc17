#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/text/tokenizer.h"

namespace mmpt::text {

/// A token of `added_tokens` in a `tokenizer.json`, matched in raw text before anything else.
struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool lstrip = false;  // strip white space before it (JavaScript's trimEnd of the text before)
  bool rstrip = false;  // strip white space after it
  bool special = false;
};

/// Finds added tokens in text the way the reference does: at the leftmost position where any
/// token starts, the longest token there; `single_word` and `normalized` play no part.
/// Thread safety: immutable after construction.
class AddedTokenMatcher {
 public:
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  /// Find the first token occurrence in `text` at or after `pos`; set `*begin` and return the
  /// token's index in the constructor's vector, or -1 when there is none.
  int32_t Find(std::string_view text, size_t pos, size_t* begin) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> edges;  // byte → child node
    int32_t token = -1;                              // index of the token ending here
  };
  int32_t Child(int32_t node, uint8_t byte) const;

  std::vector<Node> nodes_;
  std::array<bool, 256> first_byte_{};
  int single_first_byte_ = -1;  // when every token starts with the same byte, memchr for it
};

}  // namespace mmpt::text
