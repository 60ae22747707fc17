// libFuzzer target: the whole image pipeline (probe, pixel budget, decode with libjpeg-turbo,
// libpng, libwebp, giflib or stb_image, orientation, alpha, resize, patchify) on arbitrary
// bytes must never crash or read out of bounds; a success must be self-consistent.
#include <cstdlib>

#include "mmpt/media/image_preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mmpt::media::ImagePreprocessConfig config;
  config.decode.max_pixels = 1 << 22;  // keep each input cheap; the budget path is exercised too
  config.resize.max_pixels = 256 * 256;
  auto out = mmpt::media::PreprocessImage({reinterpret_cast<const std::byte*>(data), size}, config);
  if (out.ok() &&
      out->pixel_values.size() != out->grid.patches() * mmpt::media::PatchDim(config.patch)) {
    std::abort();
  }
  return 0;
}
