#include "mmpt/media/image_decode.h"
#include "mmpt/media/jpeg_error_internal.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <gif_lib.h>
#include <jpeglib.h>
// jerror.h needs jpeglib.h first.
#include <jerror.h>
#include <png.h>
#include <stb/stb_image.h>
#include <webp/decode.h>
#include <webp/demux.h>

namespace mmpt::media {
namespace {

// Pillow's MULDIV255: a·b/255 rounded, in integers.
inline uint8_t MulDiv255(uint32_t a, uint32_t b) {
  uint32_t t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

// ---- JPEG. libjpeg reports errors by longjmp: the functions between setjmp and the library
// hold only trivially destructible locals, and the Image they fill is owned by the caller. ----

using internal::JpegError;
using internal::JpegErrorExit;

// Warnings about damaged data are tolerated, as Pillow tolerates them; a file that ends before
// its last scan is not (libjpeg would pad it with grey), as Pillow refuses truncated files.
void JpegMessage(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) JpegErrorExit(cinfo);
}

bool DecompressJpeg(const uint8_t* data, size_t size, uint32_t scale_denom, JpegError* err,
                    Image* out) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = JpegErrorExit;
  err->mgr.emit_message = JpegMessage;
  JSAMPLE* cmyk_row = nullptr;
  if (setjmp(err->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  cinfo.scale_num = 1;
  cinfo.scale_denom = scale_denom;
  jpeg_start_decompress(&cinfo);
  out->Reset(cinfo.output_width, cinfo.output_height, 3);
  if (cmyk) {
    cmyk_row = static_cast<JSAMPLE*>((*cinfo.mem->alloc_small)(
        reinterpret_cast<j_common_ptr>(&cinfo), JPOOL_IMAGE, size_t{cinfo.output_width} * 4));
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    uint8_t* row = out->row(cinfo.output_scanline);
    JSAMPROW target = cmyk ? cmyk_row : row;
    jpeg_read_scanlines(&cinfo, &target, 1);
    if (cmyk) {
      // Stored values are inverted inks (Adobe); Pillow: R = (255−K)·(1 − C/255).
      for (uint32_t x = 0; x < cinfo.output_width; ++x) {
        const uint8_t* s = cmyk_row + 4 * x;
        for (int c = 0; c < 3; ++c) {
          row[3 * x + c] = static_cast<uint8_t>(s[3] - MulDiv255(255 - s[c], s[3]));
        }
      }
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

Status DecodeJpeg(std::span<const std::byte> bytes, const DecodeOptions& options, Image* out) {
  uint32_t denom = options.jpeg_scale_denom;
  if (denom != 1 && denom != 2 && denom != 4 && denom != 8) {
    return Status::InvalidArgument("jpeg: scale 1/{} (1, 2, 4 or 8)", denom);
  }
  JpegError err;
  if (!DecompressJpeg(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), denom, &err,
                      out)) {
    return Status::Corrupt("jpeg: {}", err.message);
  }
  return Status::OK();
}

// ---- PNG (longjmp as well; same discipline) ----

struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t at;
  char message[256];
};

void PngRead(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->at) png_error(png, "file truncated");
  std::memcpy(out, src->data + src->at, n);
  src->at += n;
}

void PngError(png_structp png, png_const_charp message) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof(src->message), "%s", message);
  png_longjmp(png, 1);
}

void PngWarning(png_structp, png_const_charp) {}

bool DecompressPng(PngSource* src, Image* out, png_bytep* rows) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, src, PngError, PngWarning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    std::snprintf(src->message, sizeof(src->message), "out of memory");
    png_destroy_read_struct(&png, nullptr, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, src, PngRead);
  // CRC errors in ancillary chunks are warnings, as in Pillow; image data must be intact.
  png_set_crc_action(png, PNG_CRC_WARN_DISCARD, PNG_CRC_ERROR_QUIT);
  png_read_info(png, info);
  int color_type = png_get_color_type(png, info);
  int depth = png_get_bit_depth(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  if (depth == 16) png_set_strip_16(png);
  if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_gray_to_rgb(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  uint32_t channels = png_get_channels(png, info);
  if (channels != 3 && channels != 4) png_error(png, "unexpected channel count");
  out->Reset(png_get_image_width(png, info), png_get_image_height(png, info), channels);
  for (uint32_t y = 0; y < out->height; ++y) rows[y] = out->row(y);
  png_read_image(png, rows);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

Status DecodePng(std::span<const std::byte> bytes, const ImageInfo& info, Image* out) {
  PngSource src{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, {}};
  std::vector<png_bytep> rows(info.height);
  if (!DecompressPng(&src, out, rows.data())) return Status::Corrupt("png: {}", src.message);
  return Status::OK();
}

// ---- WebP ----

Status DecodeWebp(std::span<const std::byte> bytes, Image* out) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(data, bytes.size(), &features) != VP8_STATUS_OK) {
    return Status::Corrupt("webp: bad bitstream header");
  }
  if (features.has_animation) {
    // First frame, composed on its canvas by the demuxer, as Pillow reads it.
    WebPData webp_data = {data, bytes.size()};
    WebPAnimDecoderOptions anim_options;
    WebPAnimDecoderOptionsInit(&anim_options);
    anim_options.color_mode = MODE_RGBA;
    WebPAnimDecoder* decoder = WebPAnimDecoderNew(&webp_data, &anim_options);
    if (decoder == nullptr) return Status::Corrupt("webp: cannot parse the animation");
    WebPAnimInfo anim;
    uint8_t* frame = nullptr;
    int timestamp = 0;
    bool ok = WebPAnimDecoderGetInfo(decoder, &anim) &&
              WebPAnimDecoderGetNext(decoder, &frame, &timestamp);
    if (ok) {
      out->Reset(anim.canvas_width, anim.canvas_height, 4);
      std::memcpy(out->pixels.data(), frame, out->pixels.size());
    }
    WebPAnimDecoderDelete(decoder);
    if (!ok) return Status::Corrupt("webp: cannot decode the first frame");
    return Status::OK();
  }
  out->Reset(static_cast<uint32_t>(features.width), static_cast<uint32_t>(features.height),
             features.has_alpha ? 4u : 3u);
  int stride = static_cast<int>(out->row_bytes());
  uint8_t* ok =
      features.has_alpha
          ? WebPDecodeRGBAInto(data, bytes.size(), out->pixels.data(), out->pixels.size(), stride)
          : WebPDecodeRGBInto(data, bytes.size(), out->pixels.data(), out->pixels.size(), stride);
  if (ok == nullptr) return Status::Corrupt("webp: cannot decode the bitstream");
  return Status::OK();
}

// ---- GIF: the first frame only ----

struct GifSource {
  const uint8_t* data;
  size_t size;
  size_t at;
};

int GifRead(GifFileType* gif, GifByteType* out, int n) {
  auto* src = static_cast<GifSource*>(gif->UserData);
  size_t count = std::min<size_t>(static_cast<size_t>(n), src->size - src->at);
  std::memcpy(out, src->data + src->at, count);
  src->at += count;
  return static_cast<int>(count);
}

Status ReadGifFirstFrame(GifFileType* gif, Image* out) {
  int transparent = NO_TRANSPARENT_COLOR;
  for (;;) {
    GifRecordType type;
    if (DGifGetRecordType(gif, &type) != GIF_OK) break;
    if (type == TERMINATE_RECORD_TYPE) return Status::Corrupt("gif: no image in the file");
    if (type == EXTENSION_RECORD_TYPE) {
      int code;
      GifByteType* ext;
      if (DGifGetExtension(gif, &code, &ext) != GIF_OK) break;
      if (code == GRAPHICS_EXT_FUNC_CODE && ext != nullptr) {
        GraphicsControlBlock gcb;
        if (DGifExtensionToGCB(ext[0], ext + 1, &gcb) == GIF_OK) transparent = gcb.TransparentColor;
      }
      while (ext != nullptr) {
        if (DGifGetExtensionNext(gif, &ext) != GIF_OK) return Status::Corrupt("gif: bad extension");
      }
      continue;
    }
    if (type != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(gif) != GIF_OK) break;
    const GifImageDesc& desc = gif->Image;
    const ColorMapObject* map = desc.ColorMap ? desc.ColorMap : gif->SColorMap;
    if (map == nullptr) return Status::Corrupt("gif: no colour table");
    uint32_t left = desc.Left, top = desc.Top, fw = desc.Width, fh = desc.Height;
    uint32_t width = std::max<uint32_t>(gif->SWidth, left + fw);
    uint32_t height = std::max<uint32_t>(gif->SHeight, top + fh);
    bool alpha = transparent != NO_TRANSPARENT_COLOR;
    out->Reset(width, height, alpha ? 4u : 3u);
    auto color = [&](int index, uint8_t* px) {
      if (index < map->ColorCount) {
        px[0] = map->Colors[index].Red;
        px[1] = map->Colors[index].Green;
        px[2] = map->Colors[index].Blue;
      } else {
        px[0] = px[1] = px[2] = 0;
      }
      if (alpha) px[3] = index == transparent ? 0 : 255;
    };
    // Outside the frame: the transparent index if there is one, else index 0 (Pillow's fill).
    uint8_t fill[4];
    color(alpha ? transparent : 0, fill);
    for (size_t i = 0; i < size_t{width} * height; ++i) {
      std::memcpy(&out->pixels[i * out->channels], fill, out->channels);
    }
    std::vector<GifPixelType> line(fw);
    static constexpr uint32_t kPassStart[] = {0, 4, 2, 1}, kPassStep[] = {8, 8, 4, 2};
    uint32_t passes = desc.Interlace ? 4 : 1;
    for (uint32_t pass = 0; pass < passes; ++pass) {
      uint32_t start = desc.Interlace ? kPassStart[pass] : 0;
      uint32_t step = desc.Interlace ? kPassStep[pass] : 1;
      for (uint32_t y = start; y < fh; y += step) {
        if (fw > 0 && DGifGetLine(gif, line.data(), static_cast<int>(fw)) != GIF_OK) {
          return Status::Corrupt("gif: image data truncated or corrupt at row {}", y);
        }
        uint8_t* row = out->row(top + y) + size_t{left} * out->channels;
        for (uint32_t x = 0; x < fw; ++x) color(line[x], row + size_t{x} * out->channels);
      }
    }
    return Status::OK();
  }
  return Status::Corrupt("gif: {}", GifErrorString(gif->Error));
}

Status DecodeGif(std::span<const std::byte> bytes, Image* out) {
  GifSource src{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0};
  int error = 0;
  GifFileType* gif = DGifOpen(&src, GifRead, &error);
  if (gif == nullptr) return Status::Corrupt("gif: {}", GifErrorString(error));
  Status status = ReadGifFirstFrame(gif, out);
  DGifCloseFile(gif, &error);
  return status;
}

// ---- BMP, through stb_image (uncompressed and bit-field BMPs; alpha dropped as Pillow does
// for 32-bit BI_RGB files) ----

Status DecodeBmp(std::span<const std::byte> bytes, const ImageInfo& info, Image* out) {
  // stb_image reads zeros past the end of its input; refuse a truncated pixel array first.
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  auto le = [&](size_t at, int n) {
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | p[at + i];
    return v;
  };
  if (bytes.size() < 34) return Status::Corrupt("bmp: header truncated");
  uint32_t header_size = le(14, 4);
  uint32_t bits = header_size == 12 ? le(24, 2) : le(28, 2);
  uint32_t compression = header_size >= 40 ? le(30, 4) : 0;
  uint64_t stride = (uint64_t{info.width} * bits + 31) / 32 * 4;
  uint64_t needed = uint64_t{le(10, 4)} + stride * info.height;
  if ((compression == 0 || compression == 3) && needed > bytes.size()) {
    return Status::Corrupt("bmp: pixel data truncated ({} of {} bytes)", bytes.size(), needed);
  }
  int w = 0, h = 0, n = 0;
  stbi_uc* pixels = stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                                          static_cast<int>(bytes.size()), &w, &h, &n, 3);
  if (pixels == nullptr) return Status::Corrupt("bmp: {}", stbi_failure_reason());
  out->Reset(static_cast<uint32_t>(w), static_cast<uint32_t>(h), 3);
  std::memcpy(out->pixels.data(), pixels, out->pixels.size());
  stbi_image_free(pixels);
  return Status::OK();
}

}  // namespace

Status DecodeImageInto(std::span<const std::byte> bytes, const DecodeOptions& options, Image* image,
                       ImageInfo* info_out) {
  MMPT_ASSIGN_OR_RETURN(ImageInfo info, ProbeImage(bytes));
  if (info_out != nullptr) *info_out = info;
  uint64_t pixels = uint64_t{info.width} * info.height;
  if (pixels > options.max_pixels) {
    return Status::InvalidArgument(
        "{} image of {}x{} = {} pixels exceeds the decode budget of {} pixels (a possible "
        "decompression bomb)",
        ImageFormatName(info.format), info.width, info.height, pixels, options.max_pixels);
  }
  Status status;
  switch (info.format) {
    case ImageFormat::kJpeg: status = DecodeJpeg(bytes, options, image); break;
    case ImageFormat::kPng: status = DecodePng(bytes, info, image); break;
    case ImageFormat::kWebp: status = DecodeWebp(bytes, image); break;
    case ImageFormat::kGif: status = DecodeGif(bytes, image); break;
    case ImageFormat::kBmp:
      if (bytes.size() > 0x7FFFFFFF) return Status::InvalidArgument("bmp: file above 2 GiB");
      status = DecodeBmp(bytes, info, image);
      break;
    case ImageFormat::kUnknown: return Status::Internal("probe accepted an unknown format");
  }
  MMPT_RETURN_IF_ERROR(status);
  // A decoder that disagrees with the header would break every size computed from the probe
  // (GIF canvases grown to the first frame included: the probe grows them the same way).
  bool scaled = info.format == ImageFormat::kJpeg && options.jpeg_scale_denom != 1;
  if (!scaled && (image->width != info.width || image->height != info.height)) {
    return Status::Corrupt("{}: decoded size {}x{} differs from the header's {}x{}",
                           ImageFormatName(info.format), image->width, image->height, info.width,
                           info.height);
  }
  return Status::OK();
}

Result<DecodedImage> DecodeImage(std::span<const std::byte> bytes, const DecodeOptions& options) {
  DecodedImage decoded;
  MMPT_RETURN_IF_ERROR(DecodeImageInto(bytes, options, &decoded.image, &decoded.info));
  return decoded;
}

}  // namespace mmpt::media
