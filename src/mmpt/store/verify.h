#pragma once

#include <cstdint>
#include <string>

#include "mmpt/core/status.h"

namespace mmpt::store {

/// What `mmpt verify` checked.
struct VerifyReport {
  uint64_t shards = 0;
  uint64_t samples = 0;
  uint64_t media = 0;
  uint64_t bytes = 0;  // bytes of shard files read
};

struct VerifyOptions {
  size_t threads = 0;  // worker threads; 0 = one per hardware thread
  bool progress = true;
};

/// Check the dataset in `dir` completely: the manifest; per shard, that every file exists with
/// the manifest's size and XXH3 checksum; the `.meta` table's structure and its counts against
/// the manifest; that the `.jsonl.idx` is Energon-valid for its `.jsonl` and every line is a
/// canonical sample whose media and token counts agree with `.meta`; that every zip entry is
/// STORED, sits where `.meta` says, has the name the line gives, and has the CRC-32 both the zip
/// and `.meta` record; and that `.tok` holds the `.meta` token count.
/// Returns OK with counts in `*report`, or the first damage found in shard order as Corrupt
/// (NotFound for a missing file), naming the file and, where one is at fault, the record (line,
/// sample or zip entry).
Status VerifyDataset(const std::string& dir, const VerifyOptions& options, VerifyReport* report);

}  // namespace mmpt::store
