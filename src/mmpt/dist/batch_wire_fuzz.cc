// libFuzzer target: DecodeBatch on arbitrary bytes (what a receiving rank is handed) must never
// crash, every array it accepts must lie inside the bytes, and an accepted batch encodes again
// to bytes that decode to the same fields.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mmpt/dist/batch_wire.h"

namespace {

template <typename T>
void CheckInside(std::span<const T> array, std::span<const std::byte> bytes) {
  if (array.empty()) return;
  const auto* begin = reinterpret_cast<const std::byte*>(array.data());
  if (begin < bytes.data() || begin + array.size_bytes() > bytes.data() + bytes.size()) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copied so the arrays are aligned, as they are in the ring or a received tensor.
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size > 0) std::memcpy(aligned.data(), data, size);
  const auto bytes = std::as_bytes(std::span(aligned)).first(size);
  auto view = mmpt::dist::DecodeBatch(bytes);
  if (!view.ok()) return 0;
  CheckInside(view->tokens, bytes);
  CheckInside(view->labels, bytes);
  CheckInside(view->position_ids, bytes);
  CheckInside(view->pixel_values, bytes);
  CheckInside(view->pixel_values_videos, bytes);
  CheckInside(view->second_per_grid_ts, bytes);
  CheckInside(view->routes, bytes);
  CheckInside(view->input_features, bytes);
  CheckInside(view->audio_routes, bytes);
  CheckInside(view->sample_index, bytes);
  std::vector<uint64_t> again((mmpt::dist::EncodedSize(*view, view->fields) + 7) / 8);
  const auto out = std::as_writable_bytes(std::span(again));
  mmpt::dist::EncodeBatch(*view, view->fields, out);
  auto round = mmpt::dist::DecodeBatch(out.first(mmpt::dist::EncodedSize(*view, view->fields)));
  if (!round.ok() || round->fields != view->fields ||
      round->scalars.num_tokens != view->scalars.num_tokens ||
      round->tokens.size() != view->tokens.size() ||
      round->pixel_values.size() != view->pixel_values.size() ||
      round->pixel_values_videos.size() != view->pixel_values_videos.size() ||
      round->input_features.size() != view->input_features.size() ||
      round->dropped.size() != view->dropped.size()) {
    std::abort();
  }
  return 0;
}
