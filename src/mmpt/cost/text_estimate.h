#pragma once

#include <cstdint>
#include <string_view>

namespace mmpt::cost {

/// Estimate the token count of UTF-8 `text` under a byte-level BPE of the Qwen family, for
/// planning when the input gives text but no token count and no tokenizer is loaded. It counts
/// pre-tokens the way such tokenizers split (letter runs, single digits, punctuation runs,
/// whitespace) and splits letter runs longer than 6 bytes every 5 bytes; each non-ASCII
/// code point counts as one token. It is an estimate (within ~15% on English prose), not a
/// tokenizer: give `text_tokens` when exact counts matter.
uint32_t EstimateTextTokens(std::string_view text);

}  // namespace mmpt::cost
