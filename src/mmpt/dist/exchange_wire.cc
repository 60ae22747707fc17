#include "mmpt/dist/exchange_wire.h"

#include <cstring>

#include <fmt/format.h>

namespace mmpt::dist {
namespace {

constexpr size_t kHeaderWords = 7;  // magic, sequence, source, index ×2, code, message bytes

size_t WordsOf(size_t bytes) { return (bytes + 3) / 4; }

// Appends a record's words.
class RecordWriter {
 public:
  explicit RecordWriter(std::vector<uint32_t>& out) : out_(out) {}
  void Word(uint32_t w) { out_.push_back(w); }
  void Bytes(const void* data, size_t size) {
    const size_t at = out_.size();
    out_.resize(at + WordsOf(size), 0);
    if (size > 0) std::memcpy(out_.data() + at, data, size);
  }
  // Its size, then its bytes.
  void Sized(const void* data, size_t size) {
    Word(static_cast<uint32_t>(size));
    Bytes(data, size);
  }
  void StatusOf(const Status& status) {
    Word(static_cast<uint32_t>(status.code()));
    Sized(status.message().data(), status.message().size());
  }

 private:
  std::vector<uint32_t>& out_;
};

// Reads a record's words; every read is bounds-checked (the bytes came from another process).
class RecordReader {
 public:
  RecordReader(std::span<const uint32_t> words, std::string where)
      : words_(words), where_(std::move(where)) {}
  bool done() const { return at_ == words_.size(); }
  Result<std::span<const uint32_t>> Words(size_t n) {
    if (n > words_.size() - at_) {
      return Status::Corrupt("{}: record cut short ({} words wanted, {} left)", where_, n,
                             words_.size() - at_);
    }
    std::span<const uint32_t> out = words_.subspan(at_, n);
    at_ += n;
    return out;
  }
  Result<uint32_t> Word() {
    MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> w, Words(1));
    return w[0];
  }
  // A size, then that many bytes, padded to a word with zeros (a record has one encoding).
  Result<std::span<const std::byte>> Sized() {
    MMPT_ASSIGN_OR_RETURN(uint32_t size, Word());
    MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> words, Words(WordsOf(size)));
    const std::span<const std::byte> bytes = std::as_bytes(words);
    for (size_t i = size; i < bytes.size(); ++i) {
      if (bytes[i] != std::byte{0}) return Status::Corrupt("{}: padding not zero", where_);
    }
    return bytes.first(size);
  }
  // Read a carried status into `out`; the result is the reading's own error.
  Status StatusOf(Status* out) {
    MMPT_ASSIGN_OR_RETURN(uint32_t code, Word());
    MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> text, Sized());
    if (code > static_cast<uint32_t>(StatusCode::kTimeout)) {
      return Status::Corrupt("{}: unknown status code {}", where_, code);
    }
    if (code == 0 && !text.empty())
      return Status::Corrupt("{}: an OK status with a message", where_);
    *out = code == 0 ? Status::OK()
                     : Status(static_cast<StatusCode>(code),
                              std::string(reinterpret_cast<const char*>(text.data()), text.size()));
    return Status::OK();
  }
  const std::string& where() const { return where_; }

 private:
  std::span<const uint32_t> words_;
  size_t at_ = 0;
  std::string where_;
};

// Parse one record of `reader` into `out`, checking it is the record of `key`.
Status DecodeRecord(RecordReader& reader, const RecordKey& key, ReceivedSample& out) {
  MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> head, reader.Words(5));
  const uint64_t index = head[3] | (uint64_t{head[4]} << 32);
  if (head[0] != kExchangeRecordMagic || head[1] != key.sequence || head[2] != key.source ||
      index != key.index) {
    return Status::Corrupt(
        "{}: expected the record of planned sample {} (source {}, index {}), got magic {:08x} "
        "sample {} (source {}, index {})",
        reader.where(), key.sequence, key.source, key.index, head[0], head[1], head[2], index);
  }
  MMPT_RETURN_IF_ERROR(reader.StatusOf(&out.status));
  if (!out.status.ok()) return Status::OK();
  MMPT_ASSIGN_OR_RETURN(std::span<const std::byte> line, reader.Sized());
  out.line = {reinterpret_cast<const char*>(line.data()), line.size()};
  MMPT_ASSIGN_OR_RETURN(uint32_t n, reader.Word());
  MMPT_ASSIGN_OR_RETURN(std::span<const uint32_t> ids, reader.Words(n));
  out.tokens = {reinterpret_cast<const int32_t*>(ids.data()), n};
  MMPT_ASSIGN_OR_RETURN(uint32_t items, reader.Word());
  for (uint32_t m = 0; m < items; ++m) {
    MMPT_ASSIGN_OR_RETURN(uint32_t sent, reader.Word());
    if (sent > 1) return Status::Corrupt("{}: media item {} has flag {}", reader.where(), m, sent);
    out.media.emplace_back();
    if (sent == 1) {
      MMPT_ASSIGN_OR_RETURN(out.media.back(), reader.Sized());
    }
  }
  return Status::OK();
}

}  // namespace

void EncodeRecord(const RecordKey& key, const Result<StoredSample>& stored,
                  std::span<const uint8_t> decoded, std::vector<uint32_t>& out) {
  out.clear();
  RecordWriter w(out);
  for (uint32_t v : {kExchangeRecordMagic, key.sequence, key.source,
                     static_cast<uint32_t>(key.index), static_cast<uint32_t>(key.index >> 32)}) {
    w.Word(v);
  }
  w.StatusOf(stored.status());
  if (!stored.ok()) return;
  w.Sized(stored->line.data(), stored->line.size());
  w.Word(static_cast<uint32_t>(stored->tokens.size()));
  w.Bytes(stored->tokens.data(), stored->tokens.size_bytes());
  w.Word(static_cast<uint32_t>(stored->media.size()));
  for (size_t m = 0; m < stored->media.size(); ++m) {
    const bool sent = m < decoded.size() && decoded[m] != 0;
    w.Word(sent ? 1 : 0);
    if (sent) w.Sized(stored->media[m].data(), stored->media[m].size());
  }
}

Status DecodeRecords(std::span<const uint32_t> words, std::span<const RecordKey> expected,
                     const std::string& where, std::vector<ReceivedSample>& out) {
  RecordReader reader(words, where);
  for (const RecordKey& key : expected) {
    out.emplace_back();
    MMPT_RETURN_IF_ERROR(DecodeRecord(reader, key, out.back()));
  }
  if (!reader.done()) {
    return Status::Corrupt("{}: words left after the {} expected records", where, expected.size());
  }
  return Status::OK();
}

uint64_t ExchangeRecordBytes(uint64_t line_bytes, uint32_t tokens, uint32_t media_items,
                             std::span<const uint64_t> sent_media_bytes) {
  uint64_t words = kHeaderWords + 1 + WordsOf(line_bytes) + 1 + tokens + 1 + media_items;
  for (uint64_t bytes : sent_media_bytes) words += 1 + WordsOf(bytes);
  return words * 4;
}

}  // namespace mmpt::dist
