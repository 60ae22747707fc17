#include "mmpt/media/image_preprocess.h"

#include <utility>

#include "mmpt/media/image_transform.h"
#include "mmpt/media/resize.h"

namespace mmpt::media {
namespace {

// The largest JPEG DCT scale that keeps the decoded image at least as large as the target on
// both axes, so the bicubic filter still only reduces.
uint32_t JpegScaleDenom(const ImageInfo& info, const ResizedSize& target) {
  bool swap = info.exif_orientation >= 5 && info.exif_orientation <= 8;
  uint64_t width = swap ? info.height : info.width, height = swap ? info.width : info.height;
  for (uint32_t denom : {8u, 4u, 2u}) {
    if (width / denom >= target.width && height / denom >= target.height) {
      return denom;
    }
  }
  return 1;
}

// Decode → orient → white background → resize: the RGB image the patches are cut from.
Result<Image> DecodeAndResize(std::span<const std::byte> bytes,
                              const ImagePreprocessConfig& config) {
  MMPT_ASSIGN_OR_RETURN(ImageInfo info, ProbeImage(bytes));
  MMPT_ASSIGN_OR_RETURN(ResizedSize target, PreprocessedSize(info, config.resize));
  DecodeOptions decode = config.decode;
  decode.jpeg_scale_denom = 1;
  if (config.jpeg_dct_scaling && info.format == ImageFormat::kJpeg) {
    decode.jpeg_scale_denom = JpegScaleDenom(info, target);
  }
  MMPT_ASSIGN_OR_RETURN(DecodedImage decoded, DecodeImage(bytes, decode));
  Image image = ApplyExifOrientation(std::move(decoded.image), info.exif_orientation);
  image = CompositeOnWhite(std::move(image));
  return ResizeBicubic(image, target.width, target.height);
}

}  // namespace

Result<ResizedSize> PreprocessedSize(const ImageInfo& info, const ResizeRule& rule) {
  bool swap = info.exif_orientation >= 5 && info.exif_orientation <= 8;
  return SmartResize(swap ? info.width : info.height, swap ? info.height : info.width, rule);
}

Result<PreprocessedImage> PreprocessImage(std::span<const std::byte> bytes,
                                          const ImagePreprocessConfig& config) {
  MMPT_ASSIGN_OR_RETURN(Image resized, DecodeAndResize(bytes, config));
  PreprocessedImage out;
  MMPT_ASSIGN_OR_RETURN(out.grid, PatchGrid(resized.height, resized.width, config.patch));
  out.height = resized.height;
  out.width = resized.width;
  out.pixel_values.resize(out.grid.patches() * PatchDim(config.patch));
  MMPT_RETURN_IF_ERROR(NormalizePatchify(resized, config.patch, out.pixel_values));
  return out;
}

Result<GridThw> PreprocessImageInto(std::span<const std::byte> bytes,
                                    const ImagePreprocessConfig& config, std::span<float> out) {
  MMPT_ASSIGN_OR_RETURN(Image resized, DecodeAndResize(bytes, config));
  MMPT_ASSIGN_OR_RETURN(GridThw grid, PatchGrid(resized.height, resized.width, config.patch));
  MMPT_RETURN_IF_ERROR(NormalizePatchify(resized, config.patch, out));
  return grid;
}

}  // namespace mmpt::media
