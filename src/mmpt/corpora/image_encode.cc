#include "mmpt/corpora/image_encode.h"
#include "mmpt/media/jpeg_error_internal.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <gif_lib.h>
#include <jpeglib.h>
#include <png.h>
#include <webp/encode.h>
#include <webp/mux.h>

namespace mmpt::corpora {

// Moved here from the media module; its names are used unqualified.
using namespace mmpt::media;
namespace {

// A big-endian TIFF block holding one IFD with the orientation tag.
std::string ExifBlock(uint8_t orientation, bool with_prefix) {
  std::string out = with_prefix ? std::string("Exif\0\0", 6) : std::string();
  const uint8_t tiff[] = {'M',  'M',         0, 42, 0, 0, 0, 8,  // header, IFD0 at 8
                          0,    1,                               // one entry
                          0x01, 0x12,        0, 3,  0, 0, 0, 1,
                          0,    orientation, 0, 0,  0, 0, 0, 0};  // no next IFD
  out.append(reinterpret_cast<const char*>(tiff), sizeof(tiff));
  return out;
}

// Index of the 6×6×6 colour-cube entry nearest to an RGB pixel.
uint8_t CubeIndex(const uint8_t* rgb) {
  auto level = [](uint8_t v) { return (v + 25) / 51; };
  return static_cast<uint8_t>(level(rgb[0]) * 36 + level(rgb[1]) * 6 + level(rgb[2]));
}

// ---- JPEG (libjpeg reports errors by longjmp; only trivially destructible locals here) ----

using internal::JpegError;
using internal::JpegErrorExit;

// Returns false with `err->message` set on failure. `*out`/`*out_size` are malloc'd by libjpeg.
bool CompressJpeg(const Image& image, const EncodeOptions& options, const uint8_t* rows,
                  uint32_t components, const char* exif, size_t exif_size, JpegError* err,
                  unsigned char** out, unsigned long* out_size) {
  jpeg_compress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = JpegErrorExit;
  if (setjmp(err->jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, out, out_size);
  cinfo.image_width = image.width;
  cinfo.image_height = image.height;
  cinfo.input_components = static_cast<int>(components);
  cinfo.in_color_space = components == 1 ? JCS_GRAYSCALE : components == 4 ? JCS_CMYK : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, options.quality, TRUE);
  if (options.progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  if (exif_size > 0) {
    jpeg_write_marker(&cinfo, JPEG_APP0 + 1, reinterpret_cast<const JOCTET*>(exif),
                      static_cast<unsigned>(exif_size));
  }
  size_t stride = size_t{image.width} * components;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(rows + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

Result<std::string> EncodeJpeg(const Image& image, const EncodeOptions& options) {
  // JPEG has no alpha: drop it, and expand gray + alpha to gray.
  uint32_t components = image.channels <= 2 ? 1 : 3;
  if (options.cmyk && components != 3) {
    return Status::InvalidArgument("jpeg: CMYK needs an RGB image, got {} channels",
                                   image.channels);
  }
  std::vector<uint8_t> pixels;
  const uint8_t* rows = image.pixels.data();
  if (options.cmyk || image.channels != components) {
    uint32_t out_components = options.cmyk ? 4 : components;
    pixels.resize(size_t{image.width} * image.height * out_components);
    size_t n = size_t{image.width} * image.height;
    for (size_t i = 0; i < n; ++i) {
      const uint8_t* in = &image.pixels[i * image.channels];
      uint8_t* o = &pixels[i * out_components];
      if (options.cmyk) {
        // Adobe CMYK JPEGs store inverted inks: 255 − C = R when K = 0; put the darkness in K.
        uint8_t mx = std::max({in[0], in[1], in[2]});
        uint8_t k = static_cast<uint8_t>(255 - mx);
        for (int c = 0; c < 3; ++c) {
          o[c] = mx == 0 ? 255 : static_cast<uint8_t>(255 - (mx - in[c]) * 255 / mx);
        }
        o[3] = static_cast<uint8_t>(255 - k);
      } else {
        std::memcpy(o, in, out_components);
      }
    }
    rows = pixels.data();
    components = out_components;
  }
  std::string exif;
  if (options.exif_orientation != 0) exif = ExifBlock(options.exif_orientation, true);
  JpegError err;
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  bool ok = CompressJpeg(image, options, rows, components, exif.data(), exif.size(), &err, &out,
                         &out_size);
  std::string bytes = ok ? std::string(reinterpret_cast<char*>(out), out_size) : std::string();
  std::free(out);
  if (!ok) return Status::Internal("jpeg encode: {}", err.message);
  return bytes;
}

// ---- PNG (libpng reports errors by longjmp too) ----

void PngWrite(png_structp png, png_bytep data, png_size_t size) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<char*>(data), size);
}

bool CompressPng(const Image& image, const EncodeOptions& options, const uint8_t* rows,
                 size_t stride, int color_type, const std::string& exif, std::string* out) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, out, PngWrite, nullptr);
  png_set_compression_level(png, 6);
  png_set_IHDR(png, info, image.width, image.height, options.palette ? 8 : options.png_bit_depth,
               color_type, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_color cube[216];
  if (options.palette) {
    for (int i = 0; i < 216; ++i) {
      cube[i] = {static_cast<png_byte>(i / 36 * 51), static_cast<png_byte>(i / 6 % 6 * 51),
                 static_cast<png_byte>(i % 6 * 51)};
    }
    png_set_PLTE(png, info, cube, 216);
  }
  if (!exif.empty()) {
    png_set_eXIf_1(png, info, static_cast<png_uint_32>(exif.size()),
                   reinterpret_cast<png_bytep>(const_cast<char*>(exif.data())));
  }
  png_write_info(png, info);
  for (uint32_t y = 0; y < image.height; ++y) {
    png_write_row(png, const_cast<png_bytep>(rows + y * stride));
  }
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return true;
}

Result<std::string> EncodePng(const Image& image, const EncodeOptions& options) {
  if (options.png_bit_depth != 8 && options.png_bit_depth != 16) {
    return Status::InvalidArgument("png: bit depth {} (8 or 16)", options.png_bit_depth);
  }
  if (options.palette && (image.channels != 3 || options.png_bit_depth != 8)) {
    return Status::InvalidArgument("png: a palette needs an 8-bit RGB image");
  }
  static constexpr int kColorTypes[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                        PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  int color_type = options.palette ? PNG_COLOR_TYPE_PALETTE : kColorTypes[image.channels - 1];
  std::vector<uint8_t> pixels;
  const uint8_t* rows = image.pixels.data();
  size_t stride = image.row_bytes();
  size_t n = size_t{image.width} * image.height;
  if (options.palette) {
    pixels.resize(n);
    for (size_t i = 0; i < n; ++i) pixels[i] = CubeIndex(&image.pixels[i * 3]);
    rows = pixels.data();
    stride = image.width;
  } else if (options.png_bit_depth == 16) {
    // Big-endian samples; the low byte varies so the 16 bits carry information of their own.
    pixels.resize(n * image.channels * 2);
    for (size_t i = 0; i < n * image.channels; ++i) {
      pixels[2 * i] = image.pixels[i];
      pixels[2 * i + 1] = static_cast<uint8_t>(i * 37);
    }
    rows = pixels.data();
    stride = image.row_bytes() * 2;
  }
  std::string exif;
  if (options.exif_orientation != 0) exif = ExifBlock(options.exif_orientation, false);
  std::string out;
  if (!CompressPng(image, options, rows, stride, color_type, exif, &out)) {
    return Status::Internal("png encode failed for a {}x{} image", image.width, image.height);
  }
  return out;
}

// ---- WebP ----

Result<std::string> EncodeWebp(const Image& image, const EncodeOptions& options) {
  if (image.channels < 3) {
    return Status::InvalidArgument("webp: needs an RGB or RGBA image, got {} channels",
                                   image.channels);
  }
  if (image.width > WEBP_MAX_DIMENSION || image.height > WEBP_MAX_DIMENSION) {
    return Status::InvalidArgument("webp: {}x{} exceeds the format's limit of {}", image.width,
                                   image.height, WEBP_MAX_DIMENSION);
  }
  WebPConfig config;
  if (!WebPConfigInit(&config)) return Status::Internal("webp: library version mismatch");
  config.lossless = options.lossless ? 1 : 0;
  config.quality = static_cast<float>(options.quality);
  config.method = options.lossless ? 1 : 2;  // fast: synthetic content compresses well anyway
  auto import = [&](const Image& src, WebPPicture* picture) {
    picture->use_argb = options.lossless ? 1 : 0;
    picture->width = static_cast<int>(src.width);
    picture->height = static_cast<int>(src.height);
    int stride = static_cast<int>(src.row_bytes());
    return src.channels == 4 ? WebPPictureImportRGBA(picture, src.pixels.data(), stride)
                             : WebPPictureImportRGB(picture, src.pixels.data(), stride);
  };
  WebPData assembled;
  WebPDataInit(&assembled);
  if (options.frames <= 1) {
    WebPPicture picture;
    WebPMemoryWriter writer;
    WebPPictureInit(&picture);
    WebPMemoryWriterInit(&writer);
    picture.writer = WebPMemoryWrite;
    picture.custom_ptr = &writer;
    bool ok = import(image, &picture) && WebPEncode(&config, &picture);
    int error = picture.error_code;
    WebPPictureFree(&picture);
    if (!ok) {
      WebPMemoryWriterClear(&writer);
      return Status::Internal("webp encode failed (error {})", error);
    }
    assembled.bytes = writer.mem;
    assembled.size = writer.size;
  } else {
    WebPAnimEncoderOptions anim_options;
    WebPAnimEncoderOptionsInit(&anim_options);
    WebPAnimEncoder* encoder = WebPAnimEncoderNew(static_cast<int>(image.width),
                                                  static_cast<int>(image.height), &anim_options);
    if (encoder == nullptr) return Status::Internal("webp: cannot create an animation encoder");
    bool ok = true;
    // Frames differ (colours rotate) so the encoder keeps each one.
    Image frame = image;
    for (uint32_t f = 0; f < options.frames && ok; ++f) {
      if (f > 0) {
        for (auto& v : frame.pixels) v = static_cast<uint8_t>(v + 41);
      }
      WebPPicture picture;
      WebPPictureInit(&picture);
      ok = import(frame, &picture) &&
           WebPAnimEncoderAdd(encoder, &picture, static_cast<int>(f * 100), &config);
      WebPPictureFree(&picture);
    }
    ok = ok &&
         WebPAnimEncoderAdd(encoder, nullptr, static_cast<int>(options.frames * 100), nullptr) &&
         WebPAnimEncoderAssemble(encoder, &assembled);
    WebPAnimEncoderDelete(encoder);
    if (!ok) return Status::Internal("webp animation encode failed");
  }
  if (options.exif_orientation != 0) {
    std::string exif = ExifBlock(options.exif_orientation, false);
    WebPMux* mux = WebPMuxCreate(&assembled, 1);
    WebPData chunk = {reinterpret_cast<const uint8_t*>(exif.data()), exif.size()};
    WebPData with_exif;
    WebPDataInit(&with_exif);
    bool ok = mux != nullptr && WebPMuxSetChunk(mux, "EXIF", &chunk, 1) == WEBP_MUX_OK &&
              WebPMuxAssemble(mux, &with_exif) == WEBP_MUX_OK;
    WebPMuxDelete(mux);
    WebPDataClear(&assembled);
    if (!ok) return Status::Internal("webp: cannot add the EXIF chunk");
    assembled = with_exif;
  }
  std::string out(reinterpret_cast<const char*>(assembled.bytes), assembled.size);
  WebPDataClear(&assembled);
  return out;
}

// ---- GIF ----

int GifWrite(GifFileType* gif, const GifByteType* data, int size) {
  static_cast<std::string*>(gif->UserData)->append(reinterpret_cast<const char*>(data), size);
  return size;
}

Result<std::string> EncodeGif(const Image& image, const EncodeOptions& options) {
  if (image.width > 65535 || image.height > 65535) {
    return Status::InvalidArgument("gif: {}x{} exceeds 65535", image.width, image.height);
  }
  std::vector<GifByteType> indices(size_t{image.width} * image.height);
  for (size_t i = 0; i < indices.size(); ++i) {
    const uint8_t* p = &image.pixels[i * image.channels];
    uint8_t rgb[3] = {p[0], image.channels >= 3 ? p[1] : p[0], image.channels >= 3 ? p[2] : p[0]};
    indices[i] = CubeIndex(rgb);
  }
  std::string out;
  int error = 0;
  GifFileType* gif = EGifOpen(&out, GifWrite, &error);
  if (gif == nullptr) return Status::Internal("gif: {}", GifErrorString(error));
  GifColorType colors[256] = {};
  for (int i = 0; i < 216; ++i) {
    colors[i] = {static_cast<GifByteType>(i / 36 * 51), static_cast<GifByteType>(i / 6 % 6 * 51),
                 static_cast<GifByteType>(i % 6 * 51)};
  }
  ColorMapObject* map = GifMakeMapObject(256, colors);
  EGifSetGifVersion(gif, true);
  bool ok =
      map != nullptr && EGifPutScreenDesc(gif, static_cast<int>(image.width),
                                          static_cast<int>(image.height), 8, 0, map) == GIF_OK;
  for (uint32_t f = 0; f < std::max<uint32_t>(1, options.frames) && ok; ++f) {
    ok = EGifPutImageDesc(gif, 0, 0, static_cast<int>(image.width), static_cast<int>(image.height),
                          false, nullptr) == GIF_OK;
    for (uint32_t y = 0; y < image.height && ok; ++y) {
      ok = EGifPutLine(gif, &indices[size_t{y} * image.width], static_cast<int>(image.width)) ==
           GIF_OK;
    }
  }
  GifFreeMapObject(map);
  if (EGifCloseFile(gif, &error) != GIF_OK) ok = false;
  if (!ok) return Status::Internal("gif encode failed: {}", GifErrorString(error));
  return out;
}

// ---- BMP (24-bit BI_RGB; rows padded to 4 bytes, stored BGR) ----

Result<std::string> EncodeBmp(const Image& image, const EncodeOptions& options) {
  if (options.bmp_core_header && (image.width > 65535 || image.height > 65535)) {
    return Status::InvalidArgument("bmp: {}x{} too large for a core header", image.width,
                                   image.height);
  }
  size_t stride = (size_t{image.width} * 3 + 3) & ~size_t{3};
  uint32_t header = options.bmp_core_header ? 12 : 40;
  size_t offset = 14 + header;
  std::string out(offset + stride * image.height, '\0');
  auto put = [&](size_t at, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out[at + i] = static_cast<char>(v >> (8 * i));
  };
  out[0] = 'B';
  out[1] = 'M';
  put(2, static_cast<uint32_t>(out.size()), 4);
  put(10, static_cast<uint32_t>(offset), 4);
  put(14, header, 4);
  if (options.bmp_core_header) {
    put(18, image.width, 2);
    put(20, image.height, 2);
    put(22, 1, 2);
    put(24, 24, 2);
  } else {
    int32_t height = static_cast<int32_t>(image.height);
    put(18, image.width, 4);
    put(22, static_cast<uint32_t>(options.bmp_top_down ? -height : height), 4);
    put(26, 1, 2);
    put(28, 24, 2);
    put(34, static_cast<uint32_t>(stride * image.height), 4);
  }
  bool top_down = options.bmp_top_down && !options.bmp_core_header;
  for (uint32_t y = 0; y < image.height; ++y) {
    const uint8_t* in = image.row(y);
    char* row = &out[offset + stride * (top_down ? y : image.height - 1 - y)];
    for (uint32_t x = 0; x < image.width; ++x, in += image.channels) {
      bool gray = image.channels < 3;
      row[3 * x + 0] = static_cast<char>(gray ? in[0] : in[2]);
      row[3 * x + 1] = static_cast<char>(gray ? in[0] : in[1]);
      row[3 * x + 2] = static_cast<char>(in[0]);
    }
  }
  return out;
}

}  // namespace

Result<std::string> EncodeImage(const Image& image, const EncodeOptions& options) {
  if (image.width == 0 || image.height == 0 || image.channels < 1 || image.channels > 4 ||
      image.pixels.size() != image.row_bytes() * image.height) {
    return Status::InvalidArgument("encode: image {}x{}x{} with {} bytes is not valid", image.width,
                                   image.height, image.channels, image.pixels.size());
  }
  if (options.exif_orientation > 8) {
    return Status::InvalidArgument("encode: EXIF orientation {} (1..8)", options.exif_orientation);
  }
  switch (options.format) {
    case ImageFormat::kJpeg:
      if (image.width > 65500 || image.height > 65500) {
        return Status::InvalidArgument("jpeg: {}x{} exceeds 65500", image.width, image.height);
      }
      return EncodeJpeg(image, options);
    case ImageFormat::kPng: return EncodePng(image, options);
    case ImageFormat::kWebp: return EncodeWebp(image, options);
    case ImageFormat::kGif: return EncodeGif(image, options);
    case ImageFormat::kBmp: return EncodeBmp(image, options);
    case ImageFormat::kUnknown: break;
  }
  return Status::InvalidArgument("encode: no format given");
}

}  // namespace mmpt::corpora
