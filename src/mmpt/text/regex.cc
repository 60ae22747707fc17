#include "mmpt/text/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <utility>

namespace mmpt::text {
namespace {

// JavaScript's `\s`: WhiteSpace and LineTerminator (ECMA-262 §22.2.2.9), as class contents.
constexpr std::string_view kJsSpaceClass =
    "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}\\x{FEFF}";
// Its complement (surrogates excluded, as UTF mode requires), for `\S` inside a class.
constexpr std::string_view kJsNonSpaceClass =
    "\\x{0}-\\x{8}\\x{E}-\\x{1F}\\x{21}-\\x{9F}\\x{A1}-\\x{167F}\\x{1681}-\\x{1FFF}"
    "\\x{200B}-\\x{2027}\\x{202A}-\\x{202E}\\x{2030}-\\x{205E}\\x{2060}-\\x{2FFF}"
    "\\x{3001}-\\x{D7FF}\\x{E000}-\\x{FEFE}\\x{FF00}-\\x{10FFFF}";

// The reference's rewrites of patterns JavaScript cannot parse (its PROBLEMATIC_REGEX_MAP),
// applied the same way so the meaning matches it exactly.
constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kReferenceRewrites = {{
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)", "(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))"},
    {" ?[^(\\s|[.,!?\xE2\x80\xA6\xE3\x80\x82\xEF\xBC\x8C\xE3\x80\x81\xE0\xA5\xA4\xDB\x94\xD8\x8C])]"
     "+",
     " ?[^\\s.,!?\xE2\x80\xA6\xE3\x80\x82\xEF\xBC\x8C\xE3\x80\x81\xE0\xA5\xA4\xDB\x94\xD8\x8C]+"},
}};

std::string ReplaceAll(std::string text, std::string_view from, std::string_view to) {
  size_t pos = 0;
  while ((pos = text.find(from, pos)) != std::string::npos) {
    text.replace(pos, from.size(), to);
    pos += to.size();
  }
  return text;
}

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

struct MatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  MatchState() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

}  // namespace

Result<std::string> TranslateJsRegex(std::string_view input) {
  std::string pattern(input);
  for (const auto& [from, to] : kReferenceRewrites)
    pattern = ReplaceAll(std::move(pattern), from, to);

  std::string out;
  out.reserve(pattern.size() * 2);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      if (i + 1 >= pattern.size())
        return Status::InvalidArgument("regex ends with a lone backslash: {}", input);
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kJsSpaceClass) : "[" + std::string(kJsSpaceClass) + "]";
      } else if (e == 'S') {
        out += in_class ? std::string(kJsNonSpaceClass) : "[^" + std::string(kJsSpaceClass) + "]";
      } else if (e == 'u') {
        // \uXXXX or \u{X...}: PCRE2 spells both \x{...}.
        if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
          const size_t close = pattern.find('}', i + 2);
          if (close == std::string::npos)
            return Status::InvalidArgument("unterminated \\u{{...}} in regex: {}", input);
          out += "\\x{" + pattern.substr(i + 2, close - i - 2) + "}";
          i = close;
        } else if (i + 4 < pattern.size() + 0 && IsHex(pattern[i + 1]) && IsHex(pattern[i + 2]) &&
                   IsHex(pattern[i + 3]) && IsHex(pattern[i + 4])) {
          out += "\\x{" + pattern.substr(i + 1, 4) + "}";
          i += 4;
        } else {
          return Status::InvalidArgument("malformed \\u escape in regex: {}", input);
        }
      } else if (e == 'p' || e == 'P' || e == 'x') {
        out += '\\';
        out += e;  // \p{..} and \x{..} / \xHH mean the same in PCRE2
      } else {
        out += '\\';
        out += e;
      }
      continue;
    }
    if (in_class) {
      if (c == ']') {
        in_class = false;
        out += c;
      } else if (c == '[') {
        out += "\\[";  // literal in JavaScript; PCRE2 would read "[:" as a POSIX class
      } else {
        out += c;
      }
      continue;
    }
    if (c == '[') {
      // JavaScript's empty classes: [] matches nothing, [^] matches any character.
      if (pattern.compare(i, 2, "[]") == 0) {
        out += "(?!)";
        ++i;
        continue;
      }
      if (pattern.compare(i, 3, "[^]") == 0) {
        out += "[\\x{0}-\\x{10FFFF}]";
        i += 2;
        continue;
      }
      in_class = true;
      out += c;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
    } else if (c == '.') {
      out += "[^\\n\\r\\x{2028}\\x{2029}]";
    } else {
      out += c;
    }
  }
  if (in_class) return Status::InvalidArgument("unterminated character class in regex: {}", input);
  return out;
}

Result<Regex> Regex::Compile(std::string_view pattern) {
  MMPT_ASSIGN_OR_RETURN(std::string translated, TranslateJsRegex(pattern));
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
      PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_NO_UTF_CHECK, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    std::array<PCRE2_UCHAR, 256> message{};
    pcre2_get_error_message(error_code, message.data(), message.size());
    return Status::InvalidArgument("regex '{}' does not compile (as '{}'): {} at offset {}",
                                   pattern, translated,
                                   reinterpret_cast<const char*>(message.data()), error_offset);
  }
  // JIT is a speed-up only; without it (an unsupported CPU) pcre2_match interprets.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  Regex regex;
  regex.pattern_ = std::string(pattern);
  regex.code_ = code;
  return regex;
}

Regex::Regex(Regex&& other) noexcept
    : pattern_(std::move(other.pattern_)), code_(std::exchange(other.code_, nullptr)) {}

Regex& Regex::operator=(Regex&& other) noexcept {
  if (this != &other) {
    if (code_ != nullptr) pcre2_code_free(static_cast<pcre2_code*>(code_));
    pattern_ = std::move(other.pattern_);
    code_ = std::exchange(other.code_, nullptr);
  }
  return *this;
}

Regex::~Regex() {
  if (code_ != nullptr) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

Result<bool> Regex::Find(std::string_view text, size_t start, size_t* begin, size_t* end) const {
  thread_local MatchState state;
  static const char kEmpty = 0;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.empty() ? &kEmpty : text.data());
  const int rc = pcre2_match(static_cast<const pcre2_code*>(code_), subject, text.size(), start,
                             PCRE2_NO_UTF_CHECK, state.data, state.context);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    std::array<PCRE2_UCHAR, 256> message{};
    pcre2_get_error_message(rc, message.data(), message.size());
    return Status::Internal("regex '{}' failed at byte {}: {}", pattern_, start,
                            reinterpret_cast<const char*>(message.data()));
  }
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
  *begin = ovector[0];
  *end = ovector[1];
  return true;
}

}  // namespace mmpt::text
