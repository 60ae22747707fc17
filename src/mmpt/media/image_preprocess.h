#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/media/image.h"
#include "mmpt/media/image_decode.h"
#include "mmpt/media/image_probe.h"
#include "mmpt/media/patchify.h"
#include "mmpt/media/smart_resize.h"

namespace mmpt::media {

/// Everything that turns image bytes into vision-encoder input. Defaults are Qwen2-VL's.
struct ImagePreprocessConfig {
  ResizeRule resize;
  PatchConfig patch;
  DecodeOptions decode;  // pixel budget; jpeg_scale_denom is chosen per image, see below
  /// Decode JPEGs with libjpeg's DCT scaling (1/2, 1/4, 1/8) when the scaled image is still at
  /// least the target size on both axes, then resize as usual. Faster on large photos, but no
  /// longer bit-identical to the reference, which decodes at full size (measured: mean
  /// difference 0.02 of an 8-bit level on synthetic 12-megapixel JPEGs): off by default.
  bool jpeg_dct_scaling = false;
};

/// One image ready for the vision encoder.
struct PreprocessedImage {
  GridThw grid;                    // image_grid_thw
  uint32_t height = 0, width = 0;  // resized size in pixels (after EXIF orientation)
  std::vector<float, DefaultInitAllocator<float>> pixel_values;  // patches × PatchDim, Qwen layout
};

/// The resized size of an image from its probe alone (EXIF orientations 5..8 swap the sides
/// first, as the reference transposes before resizing), so a loader can size buffers and
/// count tokens before decoding. Errors: as SmartResize.
Result<ResizedSize> PreprocessedSize(const ImageInfo& info, const ResizeRule& rule);

/// Decode, orient (EXIF, as Hugging Face's load_image does with ImageOps.exif_transpose),
/// composite alpha on white (as qwen_vl_utils does), resize to SmartResize's size with
/// Pillow's bicubic filter, rescale, normalize and patchify — the pipeline of
/// Qwen2VLImageProcessor. The pixel budget is checked on the header before decoding.
/// Output equals the Pillow + NumPy reference bit for bit (ImageParityTest) unless
/// `jpeg_dct_scaling` is on. Memory: each calling thread keeps its decode and resize buffers
/// between calls (released after an image whose buffers exceed 32 MB).
/// Errors: as DecodeImage and SmartResize. Thread safety: reentrant.
Result<PreprocessedImage> PreprocessImage(std::span<const std::byte> bytes,
                                          const ImagePreprocessConfig& config = {});

/// As PreprocessImage, writing pixel values into caller-owned memory (a batch buffer), which
/// must hold exactly the grid's patches × PatchDim floats (see PreprocessedSize and PatchGrid).
/// Errors: as PreprocessImage, plus InvalidArgument for a wrongly sized `out`.
Result<GridThw> PreprocessImageInto(std::span<const std::byte> bytes,
                                    const ImagePreprocessConfig& config, std::span<float> out);

}  // namespace mmpt::media
