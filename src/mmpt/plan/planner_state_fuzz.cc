// libFuzzer target: DecodeState on arbitrary bytes (checksummed here, so the fuzzer reaches the
// parser past the checksum) must never crash, and a state it accepts must survive encoding and
// decoding again unchanged.
#include <cstdlib>
#include <string>

#include "mmpt/core/hash.h"
#include "mmpt/plan/planner_state_internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  const uint64_t hash = mmpt::Hash64(bytes);
  bytes.append(reinterpret_cast<const char*>(&hash), sizeof(hash));
  auto state = mmpt::plan::internal::DecodeState(bytes);
  if (!state.ok()) return 0;
  const std::string encoded = mmpt::plan::internal::EncodeState(*state);
  auto again = mmpt::plan::internal::DecodeState(encoded);
  if (!again.ok() || mmpt::plan::internal::EncodeState(*again) != encoded) std::abort();
  return 0;
}
