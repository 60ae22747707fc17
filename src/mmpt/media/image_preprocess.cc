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

// Per-thread buffers of the pipeline, kept between images (a fresh multi-megabyte allocation
// per image costs its page faults every time); released after an unusually large image.
struct Workspace {
  Image decoded;
  Image resized;
  void Trim() {
    constexpr size_t kKeepBytes = size_t{32} << 20;
    if (decoded.pixels.capacity() > kKeepBytes) decoded = Image{};
    if (resized.pixels.capacity() > kKeepBytes) resized = Image{};
  }
};

// Decode → orient → white background → resize: the RGB image the patches are cut from,
// left in `ws->resized`.
Status DecodeAndResize(std::span<const std::byte> bytes, const ImagePreprocessConfig& config,
                       Workspace* ws) {
  MMPT_ASSIGN_OR_RETURN(ImageInfo info, ProbeImage(bytes));
  MMPT_ASSIGN_OR_RETURN(ResizedSize target, PreprocessedSize(info, config.resize));
  DecodeOptions decode = config.decode;
  decode.jpeg_scale_denom = 1;
  if (config.jpeg_dct_scaling && info.format == ImageFormat::kJpeg) {
    decode.jpeg_scale_denom = JpegScaleDenom(info, target);
  }
  MMPT_RETURN_IF_ERROR(DecodeImageInto(bytes, decode, &ws->decoded, nullptr));
  if (info.exif_orientation >= 2 && info.exif_orientation <= 8) {
    ws->decoded = ApplyExifOrientation(std::move(ws->decoded), info.exif_orientation);
  }
  if (ws->decoded.channels == 4) ws->decoded = CompositeOnWhite(std::move(ws->decoded));
  return ResizeBicubicInto(ws->decoded, target.width, target.height, &ws->resized);
}

Workspace& ThreadWorkspace() {
  thread_local Workspace workspace;
  return workspace;
}

}  // namespace

Result<ResizedSize> PreprocessedSize(const ImageInfo& info, const ResizeRule& rule) {
  bool swap = info.exif_orientation >= 5 && info.exif_orientation <= 8;
  return SmartResize(swap ? info.width : info.height, swap ? info.height : info.width, rule);
}

Result<PreprocessedImage> PreprocessImage(std::span<const std::byte> bytes,
                                          const ImagePreprocessConfig& config) {
  Workspace& ws = ThreadWorkspace();
  Status status = DecodeAndResize(bytes, config, &ws);
  PreprocessedImage out;
  if (status.ok()) {
    const Image& resized = ws.resized;
    Result<GridThw> grid = PatchGrid(resized.height, resized.width, config.patch);
    if (grid.ok()) {
      out.grid = *grid;
      out.height = resized.height;
      out.width = resized.width;
      out.pixel_values.resize(out.grid.patches() * PatchDim(config.patch));
      status = NormalizePatchify(resized, config.patch, out.pixel_values);
    } else {
      status = grid.status();
    }
  }
  ws.Trim();
  if (!status.ok()) return status;
  return out;
}

Result<GridThw> PreprocessImageInto(std::span<const std::byte> bytes,
                                    const ImagePreprocessConfig& config, std::span<float> out) {
  Workspace& ws = ThreadWorkspace();
  Status status = DecodeAndResize(bytes, config, &ws);
  Result<GridThw> grid = status.ok() ? PatchGrid(ws.resized.height, ws.resized.width, config.patch)
                                     : Result<GridThw>(status);
  if (grid.ok()) status = NormalizePatchify(ws.resized, config.patch, out);
  ws.Trim();
  if (!status.ok()) return status;
  return grid;
}

}  // namespace mmpt::media
