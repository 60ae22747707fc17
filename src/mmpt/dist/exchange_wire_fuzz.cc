// libFuzzer target: DecodeRecords on arbitrary words (what a peer sends) must never crash, every
// view it accepts must lie inside the words, and the records it accepts encode again to exactly
// those words (a record has one encoding: zero padding, no message with an OK status). Input: a
// count c (its low 3 bits), then c keys (sequence, source, index: 16 bytes each), then the records'
// words.
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "mmpt/dist/exchange_wire.h"

namespace {

void CheckInside(const void* data, size_t bytes, std::span<const uint32_t> words) {
  if (bytes == 0) return;
  const auto* begin = static_cast<const std::byte*>(data);
  const auto* low = reinterpret_cast<const std::byte*>(words.data());
  if (begin < low || begin + bytes > low + words.size_bytes()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mmpt::dist;
  if (size < 4) return 0;
  uint32_t count;
  std::memcpy(&count, data, 4);
  count &= 7;
  if (size < 4 + size_t{count} * 16) return 0;
  std::vector<RecordKey> keys(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* at = data + 4 + size_t{i} * 16;
    std::memcpy(&keys[i].sequence, at, 4);
    std::memcpy(&keys[i].source, at + 4, 4);
    std::memcpy(&keys[i].index, at + 8, 8);
  }
  const size_t offset = 4 + size_t{count} * 16;
  std::vector<uint32_t> words((size - offset) / 4);  // whole words, aligned as received
  if (!words.empty()) std::memcpy(words.data(), data + offset, words.size() * 4);
  std::vector<ReceivedSample> received;
  if (!DecodeRecords(words, keys, "fuzz", received).ok()) return 0;
  if (received.size() != keys.size()) std::abort();
  std::vector<uint32_t> again, record;
  for (size_t i = 0; i < keys.size(); ++i) {
    const ReceivedSample& r = received[i];
    StoredSample sample;
    std::vector<uint8_t> decoded;
    if (r.status.ok()) {
      CheckInside(r.line.data(), r.line.size(), words);
      CheckInside(r.tokens.data(), r.tokens.size_bytes(), words);
      sample.line = r.line;
      sample.tokens = r.tokens;
      for (const std::optional<std::span<const std::byte>>& item : r.media) {
        if (item) CheckInside(item->data(), item->size(), words);
        sample.media.push_back(item.value_or(std::span<const std::byte>()));
        decoded.push_back(item ? 1 : 0);
      }
    }
    const mmpt::Result<StoredSample> stored =
        r.status.ok() ? mmpt::Result<StoredSample>(std::move(sample)) : r.status;
    EncodeRecord(keys[i], stored, decoded, record);
    again.insert(again.end(), record.begin(), record.end());
  }
  if (again != words) std::abort();  // one encoding per record
  return 0;
}
