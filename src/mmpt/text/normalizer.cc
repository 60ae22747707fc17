#include "mmpt/text/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

namespace mmpt::text {
namespace {

const icu::Normalizer2* IcuNormalizer(std::string_view type, UErrorCode* error) {
  if (type == "NFC") return icu::Normalizer2::getNFCInstance(*error);
  if (type == "NFD") return icu::Normalizer2::getNFDInstance(*error);
  if (type == "NFKC") return icu::Normalizer2::getNFKCInstance(*error);
  if (type == "NFKD") return icu::Normalizer2::getNFKDInstance(*error);
  return nullptr;
}

bool IsAscii(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<Normalizer>> Normalizer::Create(
    std::string_view type, std::vector<std::unique_ptr<Normalizer>> children) {
  std::unique_ptr<Normalizer> normalizer(new Normalizer());
  normalizer->type_ = std::string(type);
  if (type == "Sequence") {
    normalizer->children_ = std::move(children);
    return normalizer;
  }
  UErrorCode error = U_ZERO_ERROR;
  normalizer->icu_ = IcuNormalizer(type, &error);
  if (normalizer->icu_ == nullptr) {
    return Status::InvalidArgument(
        "normalizer type '{}' is not supported (supported: NFC, NFD, NFKC, NFKD, Sequence)", type);
  }
  if (U_FAILURE(error))
    return Status::Internal("ICU normalizer {} unavailable: {}", type, u_errorName(error));
  return normalizer;
}

Result<bool> Normalizer::Normalize(std::string_view text, std::string* out) const {
  if (icu_ == nullptr) {  // Sequence: feed each child the previous child's output
    std::string current, next;
    bool changed = false;
    for (const auto& child : children_) {
      MMPT_ASSIGN_OR_RETURN(bool child_changed, child->Normalize(changed ? current : text, &next));
      if (child_changed) {
        current.swap(next);
        changed = true;
      }
    }
    if (changed) *out = std::move(current);
    return changed;
  }
  // ASCII is invariant under all four forms.
  if (IsAscii(text)) return false;
  const auto* normalizer = static_cast<const icu::Normalizer2*>(icu_);
  UErrorCode error = U_ZERO_ERROR;
  const icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
  if (normalizer->isNormalizedUTF8(piece, error) && U_SUCCESS(error)) return false;
  error = U_ZERO_ERROR;
  std::string result;
  icu::StringByteSink<std::string> sink(&result, static_cast<int32_t>(text.size()));
  normalizer->normalizeUTF8(0, piece, sink, nullptr, error);
  if (U_FAILURE(error))
    return Status::Internal("ICU {} normalization failed: {}", type_, u_errorName(error));
  *out = std::move(result);
  return true;
}

}  // namespace mmpt::text
