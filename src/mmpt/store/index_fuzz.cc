// libFuzzer target: the .jsonl.idx reader on arbitrary bytes must never crash, and an index it
// accepts must address only bytes inside its .jsonl; the index builder covers any text. (The
// .meta reader has its own target, meta_fuzz.cc.)
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mmpt/store/jsonl_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first 8 bytes pick the .jsonl size; the rest is the index (copied to align it).
  uint64_t jsonl_size = 0;
  if (size >= 8) std::memcpy(&jsonl_size, data, 8);
  jsonl_size %= 1 << 20;
  size_t rest = size >= 8 ? size - 8 : 0;
  std::vector<uint64_t> aligned((rest + 7) / 8);
  if (rest > 0) std::memcpy(aligned.data(), data + 8, rest);
  auto bytes = std::as_bytes(std::span(aligned)).first(rest);
  auto index = mmpt::store::LineIndex::FromBytes(bytes, jsonl_size, "fuzz.idx");
  if (index.ok()) {
    for (size_t i = 0; i < index->size(); ++i) {
      if (index->begin(i) + index->length(i) > jsonl_size) std::abort();
    }
  }
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<uint64_t> offsets = mmpt::store::BuildLineIndex(text);
  if (offsets.back() != size) std::abort();
  return 0;
}
