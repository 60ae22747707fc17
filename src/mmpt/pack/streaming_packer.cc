#include "mmpt/pack/streaming_packer.h"

#include <algorithm>
#include <numeric>

namespace mmpt::pack {

StreamingPacker::StreamingPacker(PackConstraints constraints, size_t window_items, double min_fill)
    : constraints_(constraints),
      window_items_(std::max<size_t>(window_items, 1)),
      min_fill_(min_fill) {}

Status StreamingPacker::Push(uint64_t id, PackItem item, std::vector<Pack>* out) {
  if (item.tokens == 0 || item.tokens > constraints_.seq_len ||
      (constraints_.max_images != 0 && item.images > constraints_.max_images)) {
    return Status::InvalidArgument("item {} ({} tokens, {} images) can never fit a pack of {}", id,
                                   item.tokens, item.images, constraints_.seq_len);
  }
  ids_.push_back(id);
  items_.push_back(item);
  if (items_.size() >= window_items_) return PackWindow(/*flush=*/false, out);
  return Status::OK();
}

Status StreamingPacker::Flush(std::vector<Pack>* out) {
  if (items_.empty()) return Status::OK();
  return PackWindow(/*flush=*/true, out);
}

Status StreamingPacker::PackWindow(bool flush, std::vector<Pack>* out) {
  MMPT_ASSIGN_OR_RETURN(Packing packing,
                        PackItems(items_, constraints_, Algorithm::kBestFitDecreasing));
  // Fullest packs first (ties by pack order) so that what carries over is the emptiest.
  std::vector<uint32_t> order(packing.num_packs());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return packing.pack_tokens[a] > packing.pack_tokens[b];
  });
  const double threshold = min_fill_ * constraints_.seq_len;
  // Packs under the fill threshold carry over, emptiest kept last; carry at most half a window
  // so the buffer cannot grow without bound, emitting the fullest under-filled packs first.
  std::vector<uint32_t> emit, keep;
  size_t under_items = 0;
  for (uint32_t p : order) {
    if (flush || packing.pack_tokens[p] >= threshold) {
      emit.push_back(p);
    } else {
      keep.push_back(p);
      under_items += packing.Pack(p).size();
    }
  }
  size_t first_kept = 0;
  while (under_items > window_items_ / 2) {
    under_items -= packing.Pack(keep[first_kept]).size();
    emit.push_back(keep[first_kept++]);
  }
  keep.erase(keep.begin(), keep.begin() + static_cast<ptrdiff_t>(first_kept));
  for (uint32_t p : emit) {
    Pack pack;
    pack.tokens = packing.pack_tokens[p];
    for (uint32_t i : packing.Pack(p)) pack.ids.push_back(ids_[i]);
    out->push_back(std::move(pack));
  }
  std::vector<uint64_t> ids;
  std::vector<PackItem> items;
  for (uint32_t p : keep) {
    for (uint32_t i : packing.Pack(p)) {
      ids.push_back(ids_[i]);
      items.push_back(items_[i]);
    }
  }
  carried_total_ += ids.size();
  ids_ = std::move(ids);
  items_ = std::move(items);
  return Status::OK();
}

}  // namespace mmpt::pack
