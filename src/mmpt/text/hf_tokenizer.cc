#include "mmpt/text/hf_tokenizer.h"

#include <atomic>

#include "mmpt/core/hash.h"
#include "mmpt/text/utf8.h"

namespace mmpt::text {
namespace {

// Words longer than this skip the cache: they rarely repeat.
constexpr size_t kMaxCachedWordBytes = 128;
// The cache is cleared when it would grow past this many slots.
constexpr size_t kMaxCacheSlots = size_t{1} << 20;

// Per-thread memo of word → ids for one tokenizer (the last one the thread used), so repeated
// words skip BPE. Open addressing over an arena, so a hit allocates nothing.
class WordCache {
 public:
  const TokenId* Find(uint64_t hash, std::string_view word, uint32_t* count) const {
    if (slots_.empty()) return nullptr;
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.hash == 0) return nullptr;
      if (slot.hash == hash && slot.key_size == word.size() &&
          std::string_view(keys_).substr(slot.key_offset, slot.key_size) == word) {
        *count = slot.ids_size;
        return ids_.data() + slot.ids_offset;
      }
    }
  }

  void Insert(uint64_t hash, std::string_view word, const TokenId* ids, uint32_t count) {
    if ((used_ + 1) * 2 > slots_.size()) {
      if (slots_.size() >= kMaxCacheSlots) {
        Clear();
      } else {
        Grow();
      }
    }
    const size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    while (slots_[i].hash != 0) i = (i + 1) & mask;
    slots_[i] = {hash, uint32_t(keys_.size()), uint32_t(word.size()), uint32_t(ids_.size()), count};
    keys_.append(word);
    ids_.insert(ids_.end(), ids, ids + count);
    ++used_;
  }

  void Clear() {
    slots_.assign(slots_.empty() ? 4096 : slots_.size(), Slot{});
    keys_.clear();
    ids_.clear();
    used_ = 0;
  }

  uint64_t owner = 0;

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_offset = 0, key_size = 0, ids_offset = 0, ids_size = 0;
  };
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 4096 : old.size() * 2, Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.hash == 0) continue;
      size_t i = slot.hash & mask;
      while (slots_[i].hash != 0) i = (i + 1) & mask;
      slots_[i] = slot;
    }
  }
  std::vector<Slot> slots_;
  std::string keys_;
  std::vector<TokenId> ids_;
  size_t used_ = 0;
};

std::atomic<uint64_t> next_instance_id{1};

}  // namespace

HfTokenizer::HfTokenizer() : instance_id_(next_instance_id.fetch_add(1)) {}

Status HfTokenizer::EncodeWord(std::string_view word, std::vector<TokenId>* out) const {
  if (word.size() > kMaxCachedWordBytes) return model_.Encode(word, out);
  thread_local WordCache cache;
  if (cache.owner != instance_id_) {
    cache.Clear();
    cache.owner = instance_id_;
  }
  const uint64_t hash = Hash64(word) | 1;  // 0 marks an empty slot
  uint32_t count = 0;
  if (const TokenId* ids = cache.Find(hash, word, &count)) {
    out->insert(out->end(), ids, ids + count);
    return Status::OK();
  }
  const size_t before = out->size();
  MMPT_RETURN_IF_ERROR(model_.Encode(word, out));
  cache.Insert(hash, word, out->data() + before, uint32_t(out->size() - before));
  return Status::OK();
}

Status HfTokenizer::EncodeSection(std::string_view section, std::vector<TokenId>* out) const {
  thread_local std::string normalized;
  if (normalizer_ != nullptr) {
    MMPT_ASSIGN_OR_RETURN(bool changed, normalizer_->Normalize(section, &normalized));
    if (changed) section = normalized;
  }
  if (section.empty()) return Status::OK();
  thread_local std::vector<Piece> pieces, scratch;
  thread_local std::string word;
  MMPT_RETURN_IF_ERROR(pre_tokenizer_->Run(section, &pieces, &scratch));
  for (const Piece& piece : pieces) {
    std::string_view bytes = section.substr(piece.begin, piece.end - piece.begin);
    if (piece.prefix_space) {
      word.assign(1, ' ');
      word.append(bytes);
      bytes = word;
    }
    MMPT_RETURN_IF_ERROR(EncodeWord(bytes, out));
  }
  return Status::OK();
}

Status HfTokenizer::EncodeInto(std::string_view text, std::vector<TokenId>* out) const {
  // Pieces hold 32-bit offsets and ICU takes 32-bit lengths.
  if (text.size() >= (size_t{1} << 31)) {
    return Status::InvalidArgument("text of {} bytes is over the 2 GiB limit of one Encode call",
                                   text.size());
  }
  // Invalid UTF-8 is replaced first (docs/tokenizer.md): every later stage sees valid text.
  thread_local std::string sanitized;
  if (!IsValidUtf8(text)) {
    sanitized.clear();
    AppendSanitizedUtf8(text, &sanitized);
    text = sanitized;
  }
  size_t pos = 0;
  bool strip_start = false;  // the previous added token has rstrip
  while (pos <= text.size()) {
    size_t begin = text.size();
    const int32_t found = matcher_->Find(text, pos, &begin);
    std::string_view section = text.substr(pos, (found >= 0 ? begin : text.size()) - pos);
    if (strip_start) section = TrimJsSpaceStart(section);
    if (found >= 0 && added_[found].lstrip) section = TrimJsSpaceEnd(section);
    if (!section.empty()) MMPT_RETURN_IF_ERROR(EncodeSection(section, out));
    if (found < 0) break;
    out->push_back(added_[found].id);
    strip_start = added_[found].rstrip;
    pos = begin + added_[found].content.size();
  }
  return Status::OK();
}

Result<std::vector<TokenId>> HfTokenizer::Encode(std::string_view text) const {
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  MMPT_RETURN_IF_ERROR(EncodeInto(text, &ids));
  return ids;
}

bool HfTokenizer::StartsWithAddedToken(std::string_view text) const {
  size_t begin = 0;
  const int32_t found = matcher_->Find(text, 0, &begin);
  return found >= 0 && begin == 0 && !added_[found].lstrip;
}

bool HfTokenizer::EndsWithAddedToken(std::string_view text) const {
  // The matcher's tokens as it finds them scanning from the left, as Encode does.
  size_t pos = 0, begin = 0;
  int32_t last = -1;
  while (pos < text.size()) {
    const int32_t found = matcher_->Find(text, pos, &begin);
    if (found < 0) break;
    last = found;
    pos = begin + added_[found].content.size();
  }
  return last >= 0 && pos == text.size() && !added_[last].rstrip;
}

Result<size_t> HfTokenizer::Count(std::string_view text) const {
  thread_local std::vector<TokenId> ids;
  ids.clear();
  MMPT_RETURN_IF_ERROR(EncodeInto(text, &ids));
  return ids.size();
}

Result<std::string> HfTokenizer::Decode(const std::vector<TokenId>& ids) const {
  std::string bytes;
  for (TokenId id : ids) {
    if (id < 0 || size_t(id) >= decode_table_.size() || decode_table_[id] == nullptr) {
      return Status::OutOfRange("token id {} is not in the vocabulary (size {})", id,
                                decode_table_.size());
    }
    bytes.append(*decode_table_[id]);
  }
  // Ids can split a character; such bytes become U+FFFD, as the reference's TextDecoder does.
  if (IsValidUtf8(bytes)) return bytes;
  return SanitizeUtf8(bytes);
}

std::optional<TokenId> HfTokenizer::TokenToId(std::string_view token) const {
  auto it = added_ids_.find(std::string(token));
  if (it != added_ids_.end()) return it->second;
  const TokenId id = model_.FindToken(token);
  if (id >= 0) return id;
  return std::nullopt;
}

}  // namespace mmpt::text
