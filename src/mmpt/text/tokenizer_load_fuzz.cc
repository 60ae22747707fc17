// Fuzz the tokenizer.json loader (and the chat template parser): any bytes give a tokenizer or an
// error, never a crash; a tokenizer that loads encodes and decodes its own input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "mmpt/text/chat_template.h"
#include "mmpt/text/hf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto tokenizer = mmpt::text::HfTokenizer::Parse(bytes, "fuzz.json");
  if (tokenizer.ok()) {
    auto ids = (*tokenizer)->Encode(bytes.substr(0, 256));
    if (ids.ok()) {
      auto text = (*tokenizer)->Decode(*ids);
      (void)text;
    }
  }
  auto chat = mmpt::text::ChatTemplate::Parse(bytes, "fuzz.json");
  (void)chat;
  return 0;
}
