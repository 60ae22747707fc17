#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "mmpt/core/status.h"

namespace mmpt::text {

/// Rewrite a `tokenizer.json` regex (Oniguruma syntax, which the reference tokenizer runs as a
/// JavaScript `u`-mode RegExp) into PCRE2 syntax with the same JavaScript meaning: `\s`/`\S` as
/// JavaScript's Unicode white space, `.` excluding JavaScript line terminators, `\uXXXX` escapes,
/// and the reference's own rewrites of constructs JavaScript lacks (the `(?i:'s|'t|...)`
/// contraction group becomes explicit `[sS]` classes, exactly as the reference does). `\d`, `\w`
/// and `\b` stay ASCII, as in JavaScript, because the pattern is compiled without PCRE2_UCP.
/// Errors: InvalidArgument for a construct with no faithful translation.
Result<std::string> TranslateJsRegex(std::string_view pattern);

/// A compiled, JIT-accelerated PCRE2 regex over UTF-8 text.
/// Thread safety: Find is const and safe to call concurrently (per-thread match data).
class Regex {
 public:
  /// Compile `pattern` (a `tokenizer.json` regex; see TranslateJsRegex). Errors:
  /// InvalidArgument naming the pattern and PCRE2's message and offset.
  static Result<Regex> Compile(std::string_view pattern);

  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  /// Find the first match in `text` at or after byte `start`; set [*begin, *end) and return true,
  /// or return false when there is none. `text` must be valid UTF-8 and `start` a character
  /// boundary. Errors: Internal if PCRE2 gives up (JIT stack or match limit).
  Result<bool> Find(std::string_view text, size_t start, size_t* begin, size_t* end) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex() = default;
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*, opaque so pcre2.h stays out of this header
};

}  // namespace mmpt::text
