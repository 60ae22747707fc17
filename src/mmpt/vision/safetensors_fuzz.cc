// libFuzzer target: ParseSafetensors on arbitrary bytes must never crash, and every tensor it
// accepts must lie inside the bytes with the size its dtype and shape say.
#include <cstdlib>
#include <span>

#include "mmpt/vision/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto tensors = mmpt::vision::ParseSafetensors(bytes, "fuzz.safetensors");
  if (!tensors.ok()) return 0;
  for (const auto& t : *tensors) {
    uint64_t elements = 1;
    for (int64_t d : t.shape) elements *= static_cast<uint64_t>(d);
    if (t.data.size() != elements * mmpt::vision::DTypeBytes(t.dtype)) std::abort();
    if (!t.data.empty() &&
        (t.data.data() < bytes.data() || t.data.data() + t.data.size() > bytes.data() + size)) {
      std::abort();
    }
  }
  return 0;
}
