#include "mmpt/load/batch_view.h"

namespace mmpt::load {

BatchView ViewOf(const Batch& b) {
  BatchView v;
  v.scalars = {b.step,         b.micro_step,   b.dp_rank,       b.cp_rank,       b.cp,
               b.plan_hash,    b.plan_dropped, b.tokens.size(), b.position_rows, b.max_seqlen,
               b.pad_multiple, b.patch_dim,    b.mel_bins,      b.feature_frames};
  ForEachBatchArray([&](const auto& array) { v.*array.viewed = b.*array.owned; });
  v.dropped = b.dropped;
  return v;
}

uint64_t Batch::size_bytes() const {
  uint64_t bytes = 0;
  ForEachBatchArray([&](const auto& array) {
    bytes += (this->*array.owned).size() * sizeof((this->*array.owned)[0]);
  });
  return bytes;
}

}  // namespace mmpt::load
