// Fuzz Encode on arbitrary bytes with the default (Qwen3) tokenizer: never a crash, always ids
// that decode, and Count agrees with Encode.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "mmpt/text/tokenizer.h"
#include "mmpt/text/utf8.h"

namespace {

const mmpt::text::Tokenizer& Qwen3() {
  static auto tokenizer = [] {
    auto loaded = mmpt::text::LoadTokenizer(mmpt::text::FindTokenizer().ValueOrDie());
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s (run scripts/install-deps.sh)\n",
                   loaded.status().ToString().c_str());
      std::abort();
    }
    return std::move(loaded).ValueOrDie();
  }();
  return *tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto& tokenizer = Qwen3();
  auto ids = tokenizer.Encode(text);
  if (!ids.ok()) std::abort();  // every byte string must encode
  auto count = tokenizer.Count(text);
  if (!count.ok() || *count != ids->size()) std::abort();
  auto decoded = tokenizer.Decode(*ids);
  if (!decoded.ok() || !mmpt::text::IsValidUtf8(*decoded)) std::abort();
  return 0;
}
