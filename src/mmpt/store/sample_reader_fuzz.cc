// libFuzzer target: the canonical line reader on arbitrary bytes must never crash nor read past
// the line (the bytes sit in a buffer of exactly their size, under ASan). A line it accepts
// must pass ValidateSample, be accepted equal by the lenient input adapter (so the reader is
// never looser than JSON), and read back equal once rewritten by AppendSampleJson.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "mmpt/ingest/adapter.h"
#include "mmpt/store/sample_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mmpt::ingest;
  static RecordParser parser;
  static mmpt::store::SampleView view;  // reused across inputs, as Dataset readers reuse theirs
  auto exact = std::make_unique<char[]>(size);
  if (size > 0) std::memcpy(exact.get(), data, size);
  const std::string_view line(exact.get(), size);
  mmpt::Status status = mmpt::store::ReadSampleLine(line, view);
  if (!status.ok()) {
    if (status.code() != mmpt::StatusCode::kCorrupt) std::abort();
    return 0;
  }
  if (!mmpt::store::ValidateSample(view).ok()) std::abort();
  const mmpt::store::Sample sample = view.ToSample();
  auto lenient = parser.Parse(line, InputFormat::kCanonical, {"fuzz", 1});
  if (!lenient.ok() || !(*lenient == sample)) std::abort();
  std::string rewritten;
  mmpt::store::AppendSampleJson(sample, rewritten);
  rewritten.pop_back();
  mmpt::store::SampleView again;
  if (!mmpt::store::ReadSampleLine(rewritten, again).ok() || !(again.ToSample() == sample))
    std::abort();
  return 0;
}
