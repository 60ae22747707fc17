#include "mmpt/text/bpe_model.h"

#include <queue>

#include "mmpt/text/utf8.h"

namespace mmpt::text {
namespace {

// GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100 onwards in byte order.
struct ByteTables {
  std::array<char32_t, 256> to_unicode{};
  ByteTables() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_unicode[b] = printable ? char32_t(b) : char32_t(256 + extra++);
    }
  }
};
const ByteTables& Tables() {
  static const ByteTables tables;
  return tables;
}

uint64_t MixKey(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return key;
}

// Words up to this many symbols merge by a quadratic scan, which beats a heap on short words.
constexpr size_t kScanLimit = 64;

}  // namespace

char32_t ByteToUnicode(uint8_t byte) { return Tables().to_unicode[byte]; }

int UnicodeToByte(char32_t cp) {
  if (cp < 256) {
    const bool printable =
        (cp >= '!' && cp <= '~') || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF);
    return printable ? int(cp) : -1;
  }
  if (cp >= 256 + 68) return -1;
  int extra = int(cp) - 256;
  for (int b = 0; b < 256; ++b) {
    if (Tables().to_unicode[b] >= 256 && extra-- == 0) return b;
  }
  return -1;
}

void BpeModel::Reserve(size_t tokens, size_t merges) {
  bytes_to_id_.reserve(tokens);
  token_to_id_.reserve(tokens);
  id_to_bytes_.reserve(tokens);
  size_t slots = 1024;
  while (slots < merges * 2 + 2) slots *= 2;
  if (merges_.size() < slots) {
    std::vector<MergeEntry> old = std::move(merges_);
    merges_.assign(slots, MergeEntry{0, -1, -1});
    merge_count_ = 0;
    for (const MergeEntry& e : old) {
      if (e.key != 0) InsertMerge(e.key, e.rank, e.merged);
    }
  }
}

Status BpeModel::AddToken(std::string_view token, TokenId id) {
  if (id < 0) return Status::Corrupt("token '{}' has negative id {}", token, id);
  // Spell the token in raw bytes; a character outside the byte alphabet stays as its UTF-8
  // (such a token can never come out of byte-level merges, only be decoded).
  std::string bytes;
  bool byte_level = true;
  size_t pos = 0;
  while (pos < token.size()) {
    const char32_t cp = DecodeUtf8(token, &pos);
    const int b = UnicodeToByte(cp);
    if (b < 0) {
      byte_level = false;
      break;
    }
    bytes.push_back(static_cast<char>(b));
  }
  if (!byte_level) bytes = std::string(token);
  if (size_t(id) >= id_to_bytes_.size()) {
    id_to_bytes_.resize(size_t(id) + 1);
    has_id_.resize(size_t(id) + 1, false);
  }
  id_to_bytes_[id] = bytes;
  has_id_[id] = true;
  token_to_id_[std::string(token)] = id;
  if (byte_level) bytes_to_id_[std::move(bytes)] = id;
  return Status::OK();
}

void BpeModel::InsertMerge(uint64_t key, int32_t rank, TokenId merged) {
  if (key == 0) {
    zero_pair_ = {0, rank, merged};
    return;
  }
  if ((merge_count_ + 1) * 2 > merges_.size()) {
    std::vector<MergeEntry> old = std::move(merges_);
    merges_.assign(old.empty() ? 1024 : old.size() * 2, MergeEntry{0, -1, -1});
    merge_count_ = 0;
    for (const MergeEntry& e : old) {
      if (e.key != 0) InsertMerge(e.key, e.rank, e.merged);
    }
  }
  const size_t mask = merges_.size() - 1;
  for (size_t i = MixKey(key) & mask;; i = (i + 1) & mask) {
    if (merges_[i].key == key) {
      merges_[i].rank = rank;
      merges_[i].merged = merged;
      return;
    }
    if (merges_[i].key == 0) {
      merges_[i] = {key, rank, merged};
      ++merge_count_;
      return;
    }
  }
}

Status BpeModel::AddMerge(std::string_view left, std::string_view right, int32_t rank) {
  const TokenId left_id = FindToken(left);
  const TokenId right_id = FindToken(right);
  if (left_id < 0 || right_id < 0) {
    return Status::Corrupt("merge {} ('{}' '{}') names a token not in the vocabulary", rank, left,
                           right);
  }
  thread_local std::string joined;
  joined.assign(left);
  joined.append(right);
  const TokenId merged = FindToken(joined);
  if (merged < 0)
    return Status::Corrupt("merge {} ('{}' '{}') makes '{}', not in the vocabulary", rank, left,
                           right, joined);
  InsertMerge((uint64_t(uint32_t(left_id)) << 32) | uint32_t(right_id), rank, merged);
  return Status::OK();
}

void BpeModel::Finish(bool ignore_merges) {
  ignore_merges_ = ignore_merges;
  for (int b = 0; b < 256; ++b) {
    auto it = bytes_to_id_.find(std::string(1, static_cast<char>(b)));
    byte_ids_[b] = it == bytes_to_id_.end() ? -1 : it->second;
  }
  if (merges_.empty()) merges_.assign(2, MergeEntry{0, -1, -1});
}

std::pair<int32_t, TokenId> BpeModel::FindMerge(TokenId left, TokenId right) const {
  const uint64_t key = (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  if (key == 0) return {zero_pair_.rank, zero_pair_.merged};
  const size_t mask = merges_.size() - 1;
  for (size_t i = MixKey(key) & mask;; i = (i + 1) & mask) {
    const MergeEntry& e = merges_[i];
    if (e.key == key) return {e.rank, e.merged};
    if (e.key == 0) return {-1, -1};
  }
}

TokenId BpeModel::FindToken(std::string_view token) const {
  auto it = token_to_id_.find(token);
  return it == token_to_id_.end() ? -1 : it->second;
}

const std::string* BpeModel::TokenBytes(TokenId id) const {
  if (id < 0 || size_t(id) >= id_to_bytes_.size() || !has_id_[id]) return nullptr;
  return &id_to_bytes_[id];
}

void BpeModel::MergeByScan(std::vector<TokenId>* symbols) const {
  auto& s = *symbols;
  thread_local std::vector<std::pair<int32_t, TokenId>> pairs;  // merge of s[i] and s[i+1]
  pairs.resize(s.size());
  for (size_t i = 0; i + 1 < s.size(); ++i) pairs[i] = FindMerge(s[i], s[i + 1]);
  while (s.size() > 1) {
    size_t best = 0;
    int32_t best_rank = -1;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const int32_t rank = pairs[i].first;
      if (rank >= 0 && (best_rank < 0 || rank < best_rank)) {
        best_rank = rank;
        best = i;
      }
    }
    if (best_rank < 0) break;
    s[best] = pairs[best].second;
    s.erase(s.begin() + best + 1);
    pairs.erase(pairs.begin() + best + 1);
    if (best + 1 < s.size()) pairs[best] = FindMerge(s[best], s[best + 1]);
    if (best > 0) pairs[best - 1] = FindMerge(s[best - 1], s[best]);
  }
}

void BpeModel::MergeByHeap(std::vector<TokenId>* symbols) const {
  auto& s = *symbols;
  const size_t n = s.size();
  // A doubly linked list over symbol slots; a merge keeps the left slot. Heap entries carry the
  // pair they were made for and are dropped when either side has changed since.
  std::vector<int32_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = int32_t(i) - 1;
    next[i] = i + 1 < n ? int32_t(i + 1) : -1;
  }
  struct Candidate {
    int32_t rank;
    int32_t pos;
    TokenId left, right;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int32_t i) {
    if (i < 0 || next[i] < 0) return;
    const auto [rank, merged] = FindMerge(s[i], s[next[i]]);
    if (rank >= 0) heap.push({rank, i, s[i], s[next[i]]});
  };
  for (size_t i = 0; i + 1 < n; ++i) push(int32_t(i));
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const int32_t i = c.pos;
    if (!alive[i] || next[i] < 0 || s[i] != c.left || s[next[i]] != c.right) continue;
    const int32_t j = next[i];
    s[i] = FindMerge(s[i], s[j]).second;
    alive[j] = false;
    next[i] = next[j];
    if (next[j] >= 0) prev[next[j]] = i;
    push(prev[i]);
    push(i);
  }
  size_t out = 0;
  for (int32_t i = 0; i >= 0 && n > 0; i = next[i]) s[out++] = s[i];
  s.resize(out);
}

Status BpeModel::Encode(std::string_view word, std::vector<TokenId>* out) const {
  if (word.empty()) return Status::OK();
  if (ignore_merges_) {
    auto it = bytes_to_id_.find(word);
    if (it != bytes_to_id_.end()) {
      out->push_back(it->second);
      return Status::OK();
    }
  }
  thread_local std::vector<TokenId> symbols;
  symbols.clear();
  for (char c : word) {
    const TokenId id = byte_ids_[static_cast<unsigned char>(c)];
    if (id < 0) {
      return Status::InvalidArgument("byte 0x{:02X} has no token in the vocabulary",
                                     static_cast<unsigned char>(c));
    }
    symbols.push_back(id);
  }
  if (symbols.size() <= kScanLimit) {
    MergeByScan(&symbols);
  } else {
    MergeByHeap(&symbols);
  }
  out->insert(out->end(), symbols.begin(), symbols.end());
  return Status::OK();
}

}  // namespace mmpt::text
