#pragma once

#include <cstdint>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/pack/packer.h"

namespace mmpt::pack {

/// Online packing for a stream of samples: items gather in a window; when the window holds
/// `window_items`, it is packed with best-fit decreasing, packs at least `min_fill` full are
/// emitted, and the items of the others carry over into the next window. Carried items never
/// exceed the window: if they would, the fullest remaining packs are emitted as they are.
/// Not thread-safe.
class StreamingPacker {
 public:
  /// One emitted pack: the ids given to Push, largest first, and its token sum.
  struct Pack {
    std::vector<uint64_t> ids;
    uint32_t tokens = 0;
  };

  /// Errors (from Push): as PackItems for an item that can never fit.
  StreamingPacker(PackConstraints constraints, size_t window_items, double min_fill = 0.98);

  /// Add an item with caller-chosen `id`; completed packs are appended to `out`.
  Status Push(uint64_t id, PackItem item, std::vector<Pack>* out);
  /// Pack whatever is left, emitting every pack (the end of the stream).
  Status Flush(std::vector<Pack>* out);

  size_t buffered() const { return ids_.size(); }
  uint64_t carried_total() const { return carried_total_; }

 private:
  Status PackWindow(bool flush, std::vector<Pack>* out);

  PackConstraints constraints_;
  size_t window_items_;
  double min_fill_;
  std::vector<uint64_t> ids_;
  std::vector<PackItem> items_;
  uint64_t carried_total_ = 0;  // Σ over windows of items carried into the next one
};

}  // namespace mmpt::pack
