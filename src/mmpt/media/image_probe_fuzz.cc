// libFuzzer target: ProbeImage on arbitrary bytes must never crash, read out of bounds or
// report an empty image as OK.
#include <cstdlib>

#include "mmpt/media/image_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto info = mmpt::media::ProbeImage({reinterpret_cast<const std::byte*>(data), size});
  if (info.ok()) {
    if (info->width == 0 || info->height == 0 || info->frames == 0 || info->exif_orientation < 1 ||
        info->exif_orientation > 8) {
      std::abort();
    }
  } else if (info.status().message().empty()) {
    std::abort();
  }
  return 0;
}
