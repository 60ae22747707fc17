#include "mmpt/media/image_probe.h"

#include <algorithm>
#include <cstring>

#include "mmpt/media/exif.h"

namespace mmpt::media {
namespace {

// Bounds-checked little/big-endian reads over the probed bytes. Every read checks that the
// whole field lies inside the buffer; callers turn a failed read into a Corrupt status.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), n_(bytes.size()) {}
  size_t size() const { return n_; }
  bool Has(size_t at, size_t len) const { return at <= n_ && len <= n_ - at; }
  uint8_t U8(size_t at) const { return p_[at]; }
  uint32_t Be16(size_t at) const { return uint32_t{p_[at]} << 8 | p_[at + 1]; }
  uint32_t Le16(size_t at) const { return p_[at] | uint32_t{p_[at + 1]} << 8; }
  uint32_t Le24(size_t at) const { return Le16(at) | uint32_t{p_[at + 2]} << 16; }
  uint32_t Be32(size_t at) const { return Be16(at) << 16 | Be16(at + 2); }
  uint32_t Le32(size_t at) const { return Le16(at) | Le16(at + 2) << 16; }
  bool Equals(size_t at, std::string_view s) const {
    return Has(at, s.size()) && std::memcmp(p_ + at, s.data(), s.size()) == 0;
  }
  std::span<const std::byte> Slice(size_t at, size_t len) const {
    return {reinterpret_cast<const std::byte*>(p_ + at), len};
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

Status Truncated(std::string_view format, size_t at) {
  return Status::Corrupt("{}: header truncated at byte {}", format, at);
}

// JPEG: walk marker segments from SOI to the first start-of-frame, reading the first EXIF
// APP1 on the way (as Pillow does). Fill bytes (0xFF runs) before a marker are allowed.
Result<ImageInfo> ProbeJpeg(const Reader& r) {
  ImageInfo info{.format = ImageFormat::kJpeg};
  bool have_exif = false;
  size_t at = 2;
  for (;;) {
    if (!r.Has(at, 2)) return Truncated("jpeg", at);
    if (r.U8(at) != 0xFF) {
      return Status::Corrupt("jpeg: expected a marker at byte {}, found 0x{:02x}", at, r.U8(at));
    }
    while (r.Has(at + 1, 1) && r.U8(at + 1) == 0xFF) ++at;  // fill bytes
    if (!r.Has(at, 2)) return Truncated("jpeg", at);
    uint8_t marker = r.U8(at + 1);
    at += 2;
    // Markers without a length field.
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;
    if (marker == 0xD8 || marker == 0xD9 || marker == 0xDA || marker == 0x00) {
      return Status::Corrupt("jpeg: marker 0x{:02x} at byte {} before any frame header", marker,
                             at - 2);
    }
    if (!r.Has(at, 2)) return Truncated("jpeg", at);
    size_t length = r.Be16(at);
    if (length < 2) return Status::Corrupt("jpeg: segment length {} at byte {}", length, at);
    bool is_sof =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (is_sof) {
      // length(2) precision(1) height(2) width(2) components(1)
      if (length < 8) return Status::Corrupt("jpeg: frame header length {} too short", length);
      if (!r.Has(at, 8)) return Truncated("jpeg", at);
      info.height = r.Be16(at + 3);
      info.width = r.Be16(at + 5);
      uint32_t components = r.U8(at + 7);
      if (info.width == 0 || info.height == 0) {
        return Status::Corrupt("jpeg: frame size {}x{} has a zero side", info.width, info.height);
      }
      if (components == 0 || components > 4 || length < 8 + 3 * components) {
        return Status::Corrupt("jpeg: frame header with {} components, length {}", components,
                               length);
      }
      return info;
    }
    if (!r.Has(at, length)) return Truncated("jpeg", at + length);
    if (marker == 0xE1 && !have_exif && length >= 7 &&
        r.Equals(at + 2, std::string_view("Exif\0", 5))) {
      have_exif = true;
      info.exif_orientation = ExifOrientation(r.Slice(at + 2, length - 2));
    }
    at += length;
  }
}

bool ValidPngDepth(uint32_t color_type, uint32_t depth) {
  switch (color_type) {
    case 0: return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
    case 3: return depth == 1 || depth == 2 || depth == 4 || depth == 8;
    case 2:
    case 4:
    case 6: return depth == 8 || depth == 16;
    default: return false;
  }
}

// PNG: IHDR must be the first chunk. Later chunks are walked (by length, without reading
// pixel data) for an APNG frame count (acTL) and EXIF orientation (eXIf), stopping quietly
// where the file ends early: the size is already known.
Result<ImageInfo> ProbePng(const Reader& r) {
  ImageInfo info{.format = ImageFormat::kPng};
  if (!r.Has(8, 8 + 13)) return Truncated("png", r.size());
  if (!r.Equals(12, "IHDR") || r.Be32(8) != 13) {
    return Status::Corrupt("png: first chunk is not a 13-byte IHDR");
  }
  info.width = r.Be32(16);
  info.height = r.Be32(20);
  uint32_t depth = r.U8(24), color_type = r.U8(25);
  if (info.width == 0 || info.height == 0 || info.width > 0x7FFFFFFFu ||
      info.height > 0x7FFFFFFFu) {
    return Status::Corrupt("png: IHDR size {}x{} out of range", info.width, info.height);
  }
  if (!ValidPngDepth(color_type, depth)) {
    return Status::Corrupt("png: IHDR bit depth {} invalid for color type {}", depth, color_type);
  }
  size_t at = 8 + 8 + 13 + 4;
  while (r.Has(at, 8)) {
    size_t length = r.Be32(at);
    if (r.Equals(at + 4, "IEND")) break;
    if (!r.Has(at + 8, length)) break;
    if (r.Equals(at + 4, "acTL") && length >= 8) {
      info.frames = std::max<uint32_t>(1, r.Be32(at + 8));
    } else if (r.Equals(at + 4, "eXIf")) {
      info.exif_orientation = ExifOrientation(r.Slice(at + 8, length));
    }
    at += 12 + length;
  }
  return info;
}

// WebP: RIFF container; the first chunk is VP8 (lossy), VP8L (lossless) or VP8X (extended,
// whose canvas size is authoritative). Under VP8X, ANMF chunks are counted as frames and an
// EXIF chunk gives the orientation.
Result<ImageInfo> ProbeWebp(const Reader& r) {
  ImageInfo info{.format = ImageFormat::kWebp};
  if (!r.Has(12, 8)) return Truncated("webp", r.size());
  size_t riff_end = size_t{r.Le32(4)} + 8;
  if (riff_end < 20) return Status::Corrupt("webp: RIFF size {} too small", riff_end - 8);
  size_t end = std::min(riff_end, r.size());
  size_t chunk_size = r.Le32(16);
  if (r.Equals(12, "VP8 ")) {
    // frame tag (3 bytes), start code 9d 01 2a, 14-bit width and height.
    if (!r.Has(20, 10)) return Truncated("webp", r.size());
    if (chunk_size < 10) return Status::Corrupt("webp: VP8 chunk of {} bytes", chunk_size);
    if ((r.U8(20) & 1) != 0) return Status::Corrupt("webp: VP8 frame is not a key frame");
    if (r.U8(23) != 0x9D || r.U8(24) != 0x01 || r.U8(25) != 0x2A) {
      return Status::Corrupt("webp: VP8 start code missing");
    }
    info.width = r.Le16(26) & 0x3FFF;
    info.height = r.Le16(28) & 0x3FFF;
  } else if (r.Equals(12, "VP8L")) {
    // signature 0x2f, then 14 bits width-1, 14 bits height-1, 1 bit alpha, 3 bits version.
    if (!r.Has(20, 5)) return Truncated("webp", r.size());
    if (chunk_size < 5) return Status::Corrupt("webp: VP8L chunk of {} bytes", chunk_size);
    if (r.U8(20) != 0x2F) return Status::Corrupt("webp: VP8L signature missing");
    uint32_t bits = r.Le32(21);
    if ((bits >> 29) != 0) return Status::Corrupt("webp: VP8L version {}", bits >> 29);
    info.width = (bits & 0x3FFF) + 1;
    info.height = ((bits >> 14) & 0x3FFF) + 1;
  } else if (r.Equals(12, "VP8X")) {
    // flags (1), reserved (3), canvas width-1 (24 bits), canvas height-1 (24 bits).
    if (!r.Has(20, 10)) return Truncated("webp", r.size());
    if (chunk_size < 10) return Status::Corrupt("webp: VP8X chunk of {} bytes", chunk_size);
    uint8_t flags = r.U8(20);
    info.width = r.Le24(24) + 1;
    info.height = r.Le24(27) + 1;
    if (uint64_t{info.width} * info.height >= (uint64_t{1} << 32)) {
      return Status::Corrupt("webp: canvas {}x{} too large", info.width, info.height);
    }
    bool animated = (flags & 0x02) != 0;
    uint32_t frames = 0;
    size_t at = 20 + chunk_size + (chunk_size & 1);
    while (at + 8 <= end && r.Has(at, 8)) {
      size_t size = r.Le32(at + 4);
      if (r.Equals(at, "ANMF")) ++frames;
      if (r.Equals(at, "EXIF") && r.Has(at + 8, size)) {
        info.exif_orientation = ExifOrientation(r.Slice(at + 8, size));
      }
      at += 8 + size + (size & 1);
    }
    if (animated && frames > 0) info.frames = frames;
  } else {
    return Status::Corrupt("webp: unknown first chunk");
  }
  if (info.width == 0 || info.height == 0) {
    return Status::Corrupt("webp: size {}x{} has a zero side", info.width, info.height);
  }
  return info;
}

// GIF: the logical screen, grown to the first frame's extent as Pillow does; blocks are
// walked (sub-blocks skipped by their lengths) to count frames.
Result<ImageInfo> ProbeGif(const Reader& r) {
  ImageInfo info{.format = ImageFormat::kGif};
  if (!r.Has(6, 7)) return Truncated("gif", r.size());
  info.width = r.Le16(6);
  info.height = r.Le16(8);
  uint8_t flags = r.U8(10);
  size_t at = 13;
  if (flags & 0x80) at += 3u << ((flags & 7) + 1);
  uint32_t frames = 0;
  auto skip_sub_blocks = [&](size_t& pos) {
    while (r.Has(pos, 1)) {
      uint8_t len = r.U8(pos);
      pos += 1 + len;
      if (len == 0) return true;
    }
    return false;
  };
  while (r.Has(at, 1)) {
    uint8_t block = r.U8(at);
    if (block == 0x3B) break;  // trailer
    if (block == 0x21) {       // extension: label, then sub-blocks
      at += 2;
      if (!skip_sub_blocks(at)) break;
    } else if (block == 0x2C) {  // image descriptor
      if (!r.Has(at, 10)) break;
      if (frames == 0) {
        info.width = std::max(info.width, r.Le16(at + 1) + r.Le16(at + 5));
        info.height = std::max(info.height, r.Le16(at + 3) + r.Le16(at + 7));
      }
      ++frames;
      uint8_t image_flags = r.U8(at + 9);
      at += 10;
      if (image_flags & 0x80) at += 3u << ((image_flags & 7) + 1);
      at += 1;  // LZW minimum code size
      if (!skip_sub_blocks(at)) break;
    } else {
      if (frames == 0) {
        return Status::Corrupt("gif: unknown block 0x{:02x} at byte {} before the first frame",
                               block, at);
      }
      break;
    }
  }
  info.frames = std::max<uint32_t>(1, frames);
  if (info.width == 0 || info.height == 0) {
    return Status::Corrupt("gif: size {}x{} has a zero side", info.width, info.height);
  }
  return info;
}

// BMP: BITMAPCOREHEADER (12 bytes, 16-bit sizes) or BITMAPINFOHEADER and its successors
// (40+ bytes, signed 32-bit sizes; a negative height means rows stored top-down).
Result<ImageInfo> ProbeBmp(const Reader& r) {
  ImageInfo info{.format = ImageFormat::kBmp};
  if (!r.Has(14, 4)) return Truncated("bmp", r.size());
  uint32_t header_size = r.Le32(14);
  uint32_t planes, bits;
  if (header_size == 12) {
    if (!r.Has(14, 12)) return Truncated("bmp", r.size());
    info.width = r.Le16(18);
    info.height = r.Le16(20);
    planes = r.Le16(22);
    bits = r.Le16(24);
  } else if (header_size >= 16 && header_size <= 124) {
    if (!r.Has(14, 16)) return Truncated("bmp", r.size());
    int32_t width = static_cast<int32_t>(r.Le32(18));
    int32_t height = static_cast<int32_t>(r.Le32(22));
    if (width <= 0 || height == 0 || height == INT32_MIN) {
      return Status::Corrupt("bmp: size {}x{} out of range", width, height);
    }
    info.width = static_cast<uint32_t>(width);
    info.height = static_cast<uint32_t>(height < 0 ? -height : height);
    planes = r.Le16(26);
    bits = r.Le16(28);
  } else {
    return Status::Corrupt("bmp: DIB header size {} unknown", header_size);
  }
  if (planes != 1) return Status::Corrupt("bmp: {} planes", planes);
  if (bits != 1 && bits != 2 && bits != 4 && bits != 8 && bits != 16 && bits != 24 && bits != 32) {
    return Status::Corrupt("bmp: {} bits per pixel", bits);
  }
  if (info.width == 0 || info.height == 0) {
    return Status::Corrupt("bmp: size {}x{} has a zero side", info.width, info.height);
  }
  return info;
}

}  // namespace

std::string_view ImageFormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg: return "jpeg";
    case ImageFormat::kPng: return "png";
    case ImageFormat::kWebp: return "webp";
    case ImageFormat::kGif: return "gif";
    case ImageFormat::kBmp: return "bmp";
    case ImageFormat::kUnknown: break;
  }
  return "unknown";
}

ImageFormat SniffImageFormat(std::span<const std::byte> bytes) {
  Reader r(bytes);
  // A prefix of a signature is a truncated file of that format.
  auto prefix_of = [&](std::string_view signature) {
    return !bytes.empty() && bytes.size() < signature.size() &&
           std::memcmp(bytes.data(), signature.data(), bytes.size()) == 0;
  };
  if (prefix_of("\xff\xd8\xff")) return ImageFormat::kJpeg;
  if (prefix_of("\x89PNG\r\n\x1a\n")) return ImageFormat::kPng;
  if (prefix_of("GIF87a") || prefix_of("GIF89a")) return ImageFormat::kGif;
  if (r.Equals(0, "RIFF") && !r.Has(0, 12)) return ImageFormat::kWebp;
  if (prefix_of("RIFF")) return ImageFormat::kWebp;
  if (r.Has(0, 3) && r.U8(0) == 0xFF && r.U8(1) == 0xD8 && r.U8(2) == 0xFF) {
    return ImageFormat::kJpeg;
  }
  if (r.Equals(0, "\x89PNG\r\n\x1a\n")) return ImageFormat::kPng;
  if (r.Equals(0, "RIFF") && r.Equals(8, "WEBP")) return ImageFormat::kWebp;
  if (r.Equals(0, "GIF87a") || r.Equals(0, "GIF89a")) return ImageFormat::kGif;
  if (r.Equals(0, "BM") || prefix_of("BM")) return ImageFormat::kBmp;
  return ImageFormat::kUnknown;
}

Result<ImageInfo> ProbeImage(std::span<const std::byte> bytes) {
  Reader r(bytes);
  switch (SniffImageFormat(bytes)) {
    case ImageFormat::kJpeg: return ProbeJpeg(r);
    case ImageFormat::kPng: return ProbePng(r);
    case ImageFormat::kWebp: return ProbeWebp(r);
    case ImageFormat::kGif: return ProbeGif(r);
    case ImageFormat::kBmp: return ProbeBmp(r);
    case ImageFormat::kUnknown: break;
  }
  if (bytes.empty()) return Status::InvalidArgument("image is empty (0 bytes)");
  return Status::InvalidArgument("not a JPEG, PNG, WebP, GIF or BMP image (first bytes {:02x})",
                                 fmt::join(std::span(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                     std::min<size_t>(bytes.size(), 8)),
                                           " "));
}

}  // namespace mmpt::media
