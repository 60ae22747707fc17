#include "mmpt/text/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <filesystem>

#include "mmpt/text/utf8.h"

namespace mmpt::text {
namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> processor)
      : processor_(std::move(processor)) {}

  Result<std::vector<TokenId>> Encode(std::string_view text) const override {
    // SentencePiece expects valid UTF-8; apply the same replacement policy as the BPE tokenizer.
    std::string sanitized;
    if (!IsValidUtf8(text)) {
      sanitized = SanitizeUtf8(text);
      text = sanitized;
    }
    std::vector<int> ids;
    const auto status = processor_->Encode(absl::string_view(text.data(), text.size()), &ids);
    if (!status.ok()) return Status::Internal("SentencePiece encode failed: {}", status.ToString());
    return std::vector<TokenId>(ids.begin(), ids.end());
  }

  Result<std::string> Decode(const std::vector<TokenId>& ids) const override {
    const int size = processor_->GetPieceSize();
    for (TokenId id : ids) {
      if (id < 0 || id >= size)
        return Status::OutOfRange("token id {} is not in the vocabulary (size {})", id, size);
    }
    std::string text;
    const auto status = processor_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
    if (!status.ok()) return Status::Internal("SentencePiece decode failed: {}", status.ToString());
    return text;
  }

  std::optional<TokenId> TokenToId(std::string_view token) const override {
    const int id = processor_->PieceToId(absl::string_view(token.data(), token.size()));
    // PieceToId answers unk for unknown pieces; only the unk piece itself maps to it.
    if (id == processor_->unk_id() && processor_->IdToPiece(id) != token) return std::nullopt;
    return id;
  }

  size_t vocab_size() const override { return size_t(processor_->GetPieceSize()); }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> LoadSentencePieceTokenizer(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    return Status::NotFound("{}: no such tokenizer file", path);
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = processor->Load(path);
  if (!status.ok())
    return Status::Corrupt("{}: not a SentencePiece model: {}", path, status.ToString());
  return std::unique_ptr<Tokenizer>(new SentencePieceTokenizer(std::move(processor)));
}

}  // namespace mmpt::text
