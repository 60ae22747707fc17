#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mmpt::text {

/// Return whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF). SIMD-accelerated (simdjson); safe on any bytes.
bool IsValidUtf8(std::string_view text);

/// Append `text` to `out`, replacing every maximal ill-formed subsequence with U+FFFD (the
/// "substitution of maximal subparts" of Unicode §3.9, which WHATWG's TextDecoder and Node's
/// Buffer.toString follow). Valid input is appended unchanged. Safe on any bytes.
void AppendSanitizedUtf8(std::string_view text, std::string* out);

/// Return `text` with every maximal ill-formed subsequence replaced by U+FFFD.
std::string SanitizeUtf8(std::string_view text);

/// Decode the code point starting at `text[*pos]` and advance `*pos` past it. `text` must be
/// valid UTF-8 and `*pos` a character boundary before its end.
char32_t DecodeUtf8(std::string_view text, size_t* pos);

/// Append the UTF-8 encoding of `cp` (at most U+10FFFF, no surrogate) to `out`.
void AppendUtf8(char32_t cp, std::string* out);

/// Whether `cp` is white space as JavaScript's `\s` and String.trim see it (WhiteSpace and
/// LineTerminator of ECMA-262); the reference tokenizer runs on these definitions.
bool IsJsSpace(char32_t cp);

/// `text` without trailing (TrimJsSpaceEnd) or leading (TrimJsSpaceStart) JavaScript white
/// space. `text` must be valid UTF-8.
std::string_view TrimJsSpaceEnd(std::string_view text);
std::string_view TrimJsSpaceStart(std::string_view text);

}  // namespace mmpt::text
