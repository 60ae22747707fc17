#include "mmpt/store/zip_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

namespace mmpt::store {
namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kEndSize = 22;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kLocalHeaderSize = 30;

// Little-endian reads from a span whose bounds the caller has checked.
uint16_t U16(std::span<const std::byte> b, size_t at) {
  uint16_t v;
  std::memcpy(&v, b.data() + at, 2);
  return v;
}
uint32_t U32(std::span<const std::byte> b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
uint64_t U64(std::span<const std::byte> b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

// True if [offset, offset + size) lies within `total` bytes, without overflow.
bool InRange(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

}  // namespace

uint32_t Crc32(std::span<const std::byte> bytes) {
  return static_cast<uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

namespace {

// Where the central directory lies: from the end record, or the zip64 one it points to.
struct Directory {
  uint64_t count = 0;   // entries
  uint64_t offset = 0;  // of the first central header
  uint64_t size = 0;    // bytes of central headers
};

Result<Directory> FindDirectory(std::span<const std::byte> bytes, const std::string& n) {
  const uint64_t total = bytes.size();
  if (total < kEndSize) return Status::Corrupt("{}: {} bytes is too short for a zip", n, total);
  // The end record is the last 22 bytes plus a comment of up to 65535 bytes.
  size_t end_at = SIZE_MAX;
  size_t lowest = total >= kEndSize + 65535 ? total - kEndSize - 65535 : 0;
  for (size_t at = total - kEndSize + 1; at-- > lowest;) {
    if (U32(bytes, at) == kEndSig && at + kEndSize + U16(bytes, at + 20) == total) {
      end_at = at;
      break;
    }
  }
  if (end_at == SIZE_MAX) return Status::Corrupt("{}: no end of central directory record", n);
  if (U16(bytes, end_at + 4) != 0 || U16(bytes, end_at + 6) != 0) {
    return Status::Corrupt("{}: multi-disk archives are not supported", n);
  }
  Directory d{U16(bytes, end_at + 10), U32(bytes, end_at + 16), U32(bytes, end_at + 12)};
  if (d.count == 0xffff || d.size == 0xffffffff || d.offset == 0xffffffff) {
    if (end_at < 20 || U32(bytes, end_at - 20) != kZip64LocatorSig) {
      return Status::Corrupt("{}: zip64 sizes without a zip64 locator", n);
    }
    uint64_t z64_at = U64(bytes, end_at - 20 + 8);
    if (!InRange(z64_at, 56, end_at) || U32(bytes, z64_at) != kZip64EndSig) {
      return Status::Corrupt("{}: bad zip64 end of central directory at {}", n, z64_at);
    }
    d = {U64(bytes, z64_at + 32), U64(bytes, z64_at + 48), U64(bytes, z64_at + 40)};
  }
  if (!InRange(d.offset, d.size, end_at)) {
    return Status::Corrupt("{}: central directory [{}, +{}) outside the archive", n, d.offset,
                           d.size);
  }
  if (d.count > d.size / kCentralHeaderSize) {
    return Status::Corrupt("{}: {} entries cannot fit a {}-byte central directory", n, d.count,
                           d.size);
  }
  return d;
}

// Zip64 extended information in the extra fields [at, end): the 64-bit values, in order, of
// the fields the central header maxed out (sizes of `entry`, then `*local_at`).
void ReadZip64Extra(std::span<const std::byte> bytes, uint64_t at, uint64_t end, ZipEntry& entry,
                    uint64_t* local_at) {
  while (at + 4 <= end) {
    uint16_t id = U16(bytes, at);
    uint16_t size = U16(bytes, at + 2);
    if (at + 4 + size > end) break;
    if (id == 0x0001) {
      uint64_t field = at + 4;
      auto take = [&](uint64_t& value) {
        if (field + 8 <= at + 4 + size) {
          value = U64(bytes, field);
          field += 8;
        }
      };
      if (entry.uncompressed_size == 0xffffffff) take(entry.uncompressed_size);
      if (entry.compressed_size == 0xffffffff) take(entry.compressed_size);
      if (*local_at == 0xffffffff) take(*local_at);
    }
    at += 4 + size;
  }
}

}  // namespace

Result<ZipReader> ZipReader::Parse(std::span<const std::byte> bytes, std::string name) {
  ZipReader zip;
  zip.bytes_ = bytes;
  zip.name_ = std::move(name);
  const std::string& n = zip.name_;
  MMPT_ASSIGN_OR_RETURN(const Directory directory, FindDirectory(bytes, n));
  zip.entries_.reserve(directory.count);
  uint64_t at = directory.offset;
  const uint64_t cd_end = directory.offset + directory.size;
  for (uint64_t i = 0; i < directory.count; ++i) {
    if (!InRange(at, kCentralHeaderSize, cd_end) || U32(bytes, at) != kCentralHeaderSig) {
      return Status::Corrupt("{}: central directory entry {} at {} is damaged", n, i, at);
    }
    ZipEntry entry;
    entry.flags = U16(bytes, at + 8);
    entry.method = U16(bytes, at + 10);
    entry.crc32 = U32(bytes, at + 16);
    entry.compressed_size = U32(bytes, at + 20);
    entry.uncompressed_size = U32(bytes, at + 24);
    uint64_t name_len = U16(bytes, at + 28);
    uint64_t extra_len = U16(bytes, at + 30);
    uint64_t comment_len = U16(bytes, at + 32);
    uint64_t local_at = U32(bytes, at + 42);
    if (!InRange(at + kCentralHeaderSize, name_len + extra_len + comment_len, cd_end)) {
      return Status::Corrupt("{}: central directory entry {} runs past the directory", n, i);
    }
    entry.name = std::string_view(
        reinterpret_cast<const char*>(bytes.data()) + at + kCentralHeaderSize, name_len);
    const uint64_t extra_at = at + kCentralHeaderSize + name_len;
    ReadZip64Extra(bytes, extra_at, extra_at + extra_len, entry, &local_at);
    if (!InRange(local_at, kLocalHeaderSize, directory.offset) ||
        U32(bytes, local_at) != kLocalHeaderSig) {
      return Status::Corrupt("{}: entry {} ('{}'): no local header at {}", n, i, entry.name,
                             local_at);
    }
    uint64_t data_at =
        local_at + kLocalHeaderSize + U16(bytes, local_at + 26) + U16(bytes, local_at + 28);
    if (!InRange(data_at, entry.compressed_size, directory.offset)) {
      return Status::Corrupt("{}: entry {} ('{}'): data [{}, +{}) outside the archive", n, i,
                             entry.name, data_at, entry.compressed_size);
    }
    if (entry.flags & 1) {
      return Status::Corrupt("{}: entry {} ('{}') is encrypted", n, i, entry.name);
    }
    entry.data_offset = data_at;
    zip.entries_.push_back(entry);
    at += kCentralHeaderSize + name_len + extra_len + comment_len;
  }
  return zip;
}

Result<ZipReader> ZipReader::Open(const std::string& path) {
  MMPT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  std::span<const std::byte> bytes = file.bytes();
  MMPT_ASSIGN_OR_RETURN(ZipReader zip, Parse(bytes, path));
  zip.file_ = std::move(file);  // the mapping's address does not change on move
  return zip;
}

}  // namespace mmpt::store
