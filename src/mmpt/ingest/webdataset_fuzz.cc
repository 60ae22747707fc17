// libFuzzer target: the WebDataset reader on arbitrary bytes (tar, gzip or neither) must never
// crash; a key scan and a full read must agree on the samples (prepare chunks by the scan and
// reads by the full read), and every sample maps to a valid Sample or an error naming
// "file:member".
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "mmpt/ingest/webdataset.h"

namespace {

// The keys of every sample, or nullopt on an error (which must name the file).
std::optional<std::vector<std::string>> Keys(std::span<const std::byte> bytes, bool with_data) {
  auto reader = mmpt::ingest::WdsReader::Open(bytes, "fuzz.tar");
  if (!reader.ok()) {
    if (reader.status().message().rfind("fuzz.tar", 0) != 0) std::abort();
    return std::nullopt;
  }
  std::vector<std::string> keys;
  std::vector<std::string> images;
  while (true) {
    auto sample = (*reader)->Next(with_data);
    if (!sample.ok()) {
      if (sample.status().message().rfind("fuzz.tar", 0) != 0) std::abort();
      return std::nullopt;
    }
    if (!*sample) return keys;
    keys.push_back((*sample)->key);
    if (!with_data) continue;
    auto mapped = mmpt::ingest::WdsToSample(**sample, "fuzz.tar", &images);
    if (mapped.ok()) {
      if (!mmpt::store::ValidateSample(*mapped).ok()) std::abort();
      if (mapped->media.size() != images.size() || mapped->key != keys.back()) std::abort();
    } else if (mapped.status().message().rfind("fuzz.tar:", 0) != 0) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto scanned = Keys(bytes, false);
  auto read = Keys(bytes, true);
  if (scanned && read && *scanned != *read) std::abort();
  return 0;
}
