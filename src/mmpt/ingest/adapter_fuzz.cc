// libFuzzer target: every input adapter on arbitrary bytes must return a sample that passes
// ValidateSample or an error naming the file and line — never crash or read out of bounds.
#include <cstdlib>
#include <string_view>

#include "mmpt/ingest/adapter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static mmpt::ingest::RecordParser parser;
  std::string_view line(reinterpret_cast<const char*>(data), size);
  for (int f = 0; f <= static_cast<int>(mmpt::ingest::InputFormat::kChat); ++f) {
    auto sample = parser.Parse(line, static_cast<mmpt::ingest::InputFormat>(f), {"fuzz", 1});
    if (sample.ok()) {
      if (!mmpt::store::ValidateSample(*sample).ok()) std::abort();
      std::string out;
      mmpt::store::AppendSampleJson(*sample, out);  // what prepare writes must parse back
      out.pop_back();
      auto back = parser.Parse(out, mmpt::ingest::InputFormat::kCanonical, {"fuzz", 2});
      if (!back.ok()) std::abort();
    } else if (sample.status().message().rfind("fuzz:1: ", 0) != 0) {
      std::abort();
    }
  }
  return 0;
}
