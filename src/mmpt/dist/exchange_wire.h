#pragma once

// The exchange's wire format: one sample's stored bytes, or its holder's error, as a record of
// 32-bit words. Records come from other processes: every read is bounds-checked, and any words
// are either the expected records or Corrupt (exchange_wire_fuzz holds it to that).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/dataset.h"

namespace mmpt::dist {

/// Wire format of one sample's stored bytes (little-endian 32-bit words, each field padded to
/// a word):
///   magic "MXS2", sequence (index in StepPlan::sequences), source, index (low, high word),
///   status code, message bytes, message;
///   then, when the status is OK: line bytes, the line; n, n token ids (`.tok`); m media
///   items; per item 0 (not sent: another CP rank decodes it) or 1, its size and its bytes.
/// The holder renders the sample first, checking everything a trainer's Render checks (ids
/// against `.tok`, every item's CRC and header against the plan); a sample that fails travels
/// as its error, so every CP rank drops or fails it by its bad-sample policy alike, exactly
/// as with shared storage.
inline constexpr uint32_t kExchangeRecordMagic = 0x3253584d;  // "MXS2"

/// Which planned sample a record carries: its index in StepPlan::sequences and its (source,
/// index within the source).
struct RecordKey {
  uint32_t sequence = 0;
  uint32_t source = 0;
  uint64_t index = 0;
};

/// A sample's stored bytes, as its holder read them: its line, token ids and media items.
struct StoredSample {
  std::string_view line;
  std::span<const int32_t> tokens;
  std::vector<std::span<const std::byte>> media;
  store::StoredSample held;  // holds open the shard the views are into (local reads)
};

/// A record as received: the holder's verdict and, when OK, views into the received words
/// (a media item not sent is nullopt).
struct ReceivedSample {
  Status status;
  std::string_view line;
  std::span<const int32_t> tokens;
  std::vector<std::optional<std::span<const std::byte>>> media;
};

/// The record of `key` for a trainer that decodes the media `decoded` marks (1: sent), into
/// `out` (emptied first; its capacity is kept). A failed `stored` travels as its error.
void EncodeRecord(const RecordKey& key, const Result<StoredSample>& stored,
                  std::span<const uint8_t> decoded, std::vector<uint32_t>& out);

/// Parse `words`, which must be exactly the records of `expected`, in order, into `out` (one
/// per key, appended). Errors: Corrupt naming `where` and what is wrong (another sample's
/// record, a record cut short, an unknown status code or media flag, words left over).
Status DecodeRecords(std::span<const uint32_t> words, std::span<const RecordKey> expected,
                     const std::string& where, std::vector<ReceivedSample>& out);

/// Bytes of the record of a sample that rendered, with a line of `line_bytes`, `tokens` ids
/// and `media_items` items of which those sent have `sent_media_bytes` bytes each: what a
/// trainer can check it received.
uint64_t ExchangeRecordBytes(uint64_t line_bytes, uint32_t tokens, uint32_t media_items,
                             std::span<const uint64_t> sent_media_bytes);

}  // namespace mmpt::dist
