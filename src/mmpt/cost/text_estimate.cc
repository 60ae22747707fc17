#include "mmpt/cost/text_estimate.h"

namespace mmpt::cost {
namespace {

bool IsAsciiLetter(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

}  // namespace

uint32_t EstimateTextTokens(std::string_view text) {
  uint64_t tokens = 0;
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == ' ' && i + 1 < n && IsAsciiLetter(static_cast<unsigned char>(text[i + 1]))) {
      ++i;  // a leading space belongs to the word after it
      continue;
    }
    if (IsAsciiLetter(c)) {
      size_t start = i;
      while (i < n && IsAsciiLetter(static_cast<unsigned char>(text[i]))) ++i;
      size_t len = i - start;
      tokens += len <= 6 ? 1 : (len + 4) / 5;
    } else if (c >= '0' && c <= '9') {
      ++tokens;  // digits are split one by one
      ++i;
    } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      while (i < n && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
        ++i;
      ++tokens;
    } else if (c >= 0x80) {
      ++tokens;  // one code point: skip its continuation bytes
      ++i;
      while (i < n && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
    } else {
      while (i < n && text[i] == static_cast<char>(c)) ++i;  // a run of one punctuation mark
      ++tokens;
    }
  }
  return tokens > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(tokens);
}

}  // namespace mmpt::cost
