#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::text {

/// The `normalizer` of a `tokenizer.json`: Unicode normalization forms (NFC, NFD, NFKC, NFKD,
/// through ICU) and Sequence of them. Thread safety: Normalize is const and safe concurrently.
class Normalizer {
 public:
  /// Build from the JSON object's fields: `type` and, for Sequence, the child normalizers.
  /// Errors: InvalidArgument naming an unsupported type.
  static Result<std::unique_ptr<Normalizer>> Create(
      std::string_view type, std::vector<std::unique_ptr<Normalizer>> children);

  /// Normalize `text` (valid UTF-8). Return false and leave `out` untouched when `text` is
  /// already normalized (the common case, checked without copying); otherwise write the result
  /// to `out` and return true.
  Result<bool> Normalize(std::string_view text, std::string* out) const;

 private:
  Normalizer() = default;
  const void* icu_ = nullptr;  // const icu::Normalizer2*, owned by ICU; null for a Sequence
  std::vector<std::unique_ptr<Normalizer>> children_;
  std::string type_;
};

}  // namespace mmpt::text
