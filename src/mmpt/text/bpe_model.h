#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::text {

/// Map a byte to the printable character GPT-2's byte-level BPE writes for it (bytes_to_unicode).
char32_t ByteToUnicode(uint8_t byte);
/// Inverse of ByteToUnicode; -1 for a character no byte maps to.
int UnicodeToByte(char32_t cp);

/// A byte-level BPE model: vocabulary, merge ranks, and the merge loop over raw bytes.
/// Build with AddToken for every vocabulary entry, then AddMerge in rank order.
/// Thread safety: after building, Encode is const and safe to call concurrently.
class BpeModel {
 public:
  /// Reserve room for `tokens` vocabulary entries and `merges` merges (a loading speed-up).
  void Reserve(size_t tokens, size_t merges);
  /// Add vocabulary entry `token` (byte-level spelling, e.g. "Ġthe") with `id`.
  /// Errors: Corrupt for a negative id.
  Status AddToken(std::string_view token, TokenId id);
  /// Add the merge of `left` and `right` with rank `rank` (its index in `merges`). A later merge
  /// of the same pair replaces the earlier, as the reference's Map does. Errors: Corrupt when
  /// either side or their concatenation is not in the vocabulary.
  Status AddMerge(std::string_view left, std::string_view right, int32_t rank);
  /// Finish building: index single bytes. Call once after the last AddToken/AddMerge.
  void Finish(bool ignore_merges);

  /// Append the ids of one pre-tokenized word (raw bytes) to `out`, merging by lowest rank first
  /// and leftmost among equals, as Hugging Face and the reference do. Errors: InvalidArgument for
  /// a byte with no token in the vocabulary.
  Status Encode(std::string_view word, std::vector<TokenId>* out) const;

  /// Raw bytes of vocabulary entry `id` (byte-level spelling mapped back to bytes), or nullptr
  /// when `id` is not in the model's vocabulary.
  const std::string* TokenBytes(TokenId id) const;
  /// Id of the vocabulary entry spelled `token` in byte-level characters, or -1.
  TokenId FindToken(std::string_view token) const;
  /// One past the largest id in the vocabulary.
  size_t id_limit() const { return id_to_bytes_.size(); }

  /// Merge loops exposed for tests: quadratic scan for short words, heap for long ones. Both
  /// give the same ids for every word.
  void MergeByScan(std::vector<TokenId>* symbols) const;
  void MergeByHeap(std::vector<TokenId>* symbols) const;

 private:
  struct MergeEntry {
    uint64_t key;  // (left << 32) | right; 0 marks an empty slot (pair (0, 0) is stored apart)
    int32_t rank;
    TokenId merged;
  };
  // Rank and result of merging `left` with `right`; rank -1 when there is no such merge.
  std::pair<int32_t, TokenId> FindMerge(TokenId left, TokenId right) const;
  void InsertMerge(uint64_t key, int32_t rank, TokenId merged);

  // Hash and equality that look up std::string keys by std::string_view without a copy.
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  using TokenMap = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

  TokenMap bytes_to_id_;  // raw bytes → id
  TokenMap token_to_id_;  // byte-level spelling → id
  std::vector<std::string> id_to_bytes_;
  std::vector<bool> has_id_;
  std::array<TokenId, 256> byte_ids_{};
  std::vector<MergeEntry> merges_;  // open addressing, power-of-two size
  size_t merge_count_ = 0;
  MergeEntry zero_pair_{0, -1, -1};
  bool ignore_merges_ = false;
};

}  // namespace mmpt::text
