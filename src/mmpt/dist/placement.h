#pragma once

// Which exchange peer holds which shard of a dataset (dist/exchange.h: the streaming exchange
// for node-local data), and its placement file.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/manifest.h"

namespace mmpt::dist {

/// Which exchange peer (0..peers-1) holds the data files of each shard. Every peer has the
/// manifest and every shard's `.meta`; a shard's `.jsonl`, `.jsonl.idx`, `.zip` and `.tok`
/// only its holder needs.
class Placement {
 public:
  /// Shard i (manifest order) of `num_shards` on peer i mod `peers`. Errors: InvalidArgument
  /// for zero peers.
  static Result<Placement> RoundRobin(size_t num_shards, uint32_t peers);
  /// Read a placement file: {"peers": P, "shards": {"<shard path, as the manifest names it>":
  /// peer}}, naming every shard of `manifest`. Errors: NotFound/IOError (the file), Corrupt (not
  /// that JSON), InvalidArgument naming the file and the shard (a shard missing or unknown, a peer
  /// out of range).
  static Result<Placement> Read(const std::string& path, const store::Manifest& manifest);
  /// Write the placement file Read reads (atomically). Errors: IOError.
  Status Write(const std::string& path, const store::Manifest& manifest) const;

  uint32_t peers() const { return peers_; }
  size_t num_shards() const { return holder_.size(); }
  /// The peer holding shard `shard` (manifest order); `shard` < number of shards (unchecked).
  uint32_t holder(size_t shard) const { return holder_[shard]; }
  /// The shards `peer` holds, in manifest order.
  std::vector<size_t> ShardsOf(uint32_t peer) const;

 private:
  uint32_t peers_ = 0;
  std::vector<uint32_t> holder_;  // per shard
};

}  // namespace mmpt::dist
