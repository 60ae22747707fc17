// libFuzzer target: the zip reader on arbitrary bytes must never crash or hand out a span
// outside the archive.
#include <cstdlib>

#include "mmpt/store/zip_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto zip = mmpt::store::ZipReader::Parse(bytes, "fuzz.zip");
  if (!zip.ok()) return 0;
  for (size_t i = 0; i < zip->entries().size(); ++i) {
    auto entry = zip->Data(i);
    if (entry.data() < bytes.data() || entry.data() + entry.size() > bytes.data() + size) {
      std::abort();
    }
    (void)mmpt::store::Crc32(entry);
  }
  return 0;
}
