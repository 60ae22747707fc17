// libFuzzer target: ManifestFromJson on arbitrary bytes must return a manifest or a Corrupt
// error naming the file — never crash or throw — and a manifest it accepts must survive
// ManifestToJson and parse back equal.
#include <cstdlib>
#include <string_view>

#include "mmpt/store/manifest.h"

namespace {

bool SameShards(const mmpt::store::Manifest& a, const mmpt::store::Manifest& b) {
  if (a.shards.size() != b.shards.size()) return false;
  for (size_t i = 0; i < a.shards.size(); ++i) {
    const auto& x = a.shards[i];
    const auto& y = b.shards[i];
    if (x.source != y.source || x.stem != y.stem || x.samples != y.samples || x.media != y.media ||
        x.tokens != y.tokens || x.files.size() != y.files.size()) {
      return false;
    }
    for (const auto& [suffix, file] : x.files) {
      auto it = y.files.find(suffix);
      if (it == y.files.end() || it->second.bytes != file.bytes || it->second.xxh3 != file.xxh3) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto manifest = mmpt::store::ManifestFromJson(text, "fuzz.json");
  if (!manifest.ok()) {
    if (manifest.status().message().rfind("fuzz.json: ", 0) != 0) std::abort();
    return 0;
  }
  auto back = mmpt::store::ManifestFromJson(mmpt::store::ManifestToJson(*manifest), "again.json");
  if (!back.ok() || back->tokenizer != manifest->tokenizer ||
      back->tokenizer_xxh3 != manifest->tokenizer_xxh3 || back->vision != manifest->vision ||
      !SameShards(*back, *manifest)) {
    std::abort();
  }
  return 0;
}
