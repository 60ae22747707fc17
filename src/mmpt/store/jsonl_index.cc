#include "mmpt/store/jsonl_index.h"

#include <cstring>

namespace mmpt::store {

std::vector<uint64_t> BuildLineIndex(std::string_view text) {
  std::vector<uint64_t> offsets;
  offsets.reserve(text.size() / 256 + 2);
  const char* base = text.data();
  const char* end = base + text.size();
  const char* line = base;
  while (line < end) {
    const char* newline = static_cast<const char*>(std::memchr(line, '\n', end - line));
    const char* next = newline == nullptr ? end : newline + 1;
    size_t length = next - line;
    bool blank =
        (length == 1 && line[0] == '\n') || (length == 2 && line[0] == '\r' && line[1] == '\n');
    if (!blank) offsets.push_back(static_cast<uint64_t>(line - base));
    line = next;
  }
  offsets.push_back(text.size());
  return offsets;
}

std::string EncodeLineIndex(std::span<const uint64_t> offsets) {
  return std::string(reinterpret_cast<const char*>(offsets.data()), offsets.size_bytes());
}

Result<LineIndex> LineIndex::FromBytes(std::span<const std::byte> index_bytes, uint64_t jsonl_size,
                                       std::string_view name) {
  if (index_bytes.size() % sizeof(uint64_t) != 0 || index_bytes.empty()) {
    return Status::Corrupt("{}: {} bytes is not a whole, non-zero number of uint64 offsets", name,
                           index_bytes.size());
  }
  if (reinterpret_cast<uintptr_t>(index_bytes.data()) % alignof(uint64_t) != 0) {
    return Status::Internal("{}: index bytes are not 8-byte aligned", name);
  }
  std::span<const uint64_t> offsets(reinterpret_cast<const uint64_t*>(index_bytes.data()),
                                    index_bytes.size() / sizeof(uint64_t));
  if (offsets.size() > 1 && offsets[0] != 0) {
    return Status::Corrupt("{}: entry 0 is {}, expected 0", name, offsets[0]);
  }
  for (size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] <= offsets[i - 1]) {
      return Status::Corrupt("{}: entry {} ({}) does not increase past entry {} ({})", name, i,
                             offsets[i], i - 1, offsets[i - 1]);
    }
  }
  if (offsets.back() != jsonl_size) {
    return Status::Corrupt("{}: last entry {} differs from the .jsonl size {}", name,
                           offsets.back(), jsonl_size);
  }
  LineIndex index;
  index.offsets_ = offsets;
  return index;
}

std::string_view LineAt(std::string_view text, const LineIndex& index, size_t i) {
  std::string_view line = text.substr(index.begin(i), index.length(i));
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  return line;
}

}  // namespace mmpt::store
