#pragma once

// Input adapters: turn one line of a common input format into the canonical Sample.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "mmpt/core/status.h"
#include "mmpt/store/sample.h"

namespace mmpt::ingest {

/// The input formats prepare understands.
enum class InputFormat : uint8_t {
  kAuto = 0,    // detect per record from its fields
  kCanonical,   // {"segments":[...],"media":[...]}: mmpt's own lines
  kLlava,       // LLaVA / ShareGPT: "conversations" [{from, value}], "image" or "images", <image>
  kMmc4,        // mmc4: "text_list" + "image_info"[{image_name, matched_text_index}]
  kObelics,     // OBELICS: parallel "texts" / "images" lists, exactly one non-null per position
  kChat,        // Hugging Face chat: "messages" [{role, content: str | [{type: text|image}]}]
  kWebDataset,  // WebDataset tar shards (webdataset.h), not JSON lines: prepare reads every
                // input as a tar; without it, inputs named .tar, .tar.gz or .tgz are tars
};

/// Name of a format as `--format` takes it ("auto", "canonical", "llava", "mmc4", "obelics",
/// "chat", "wds").
std::string_view InputFormatName(InputFormat format);
/// Parse a `--format` value. Errors: InvalidArgument listing the names.
Result<InputFormat> ParseInputFormat(std::string_view name);

/// Where a record comes from, for error messages and for keys of records that have none.
struct RecordLocation {
  std::string_view file;  // the input path as given
  uint64_t line = 0;      // 1-based
};

/// Parse records into canonical samples. In every format a media item may be given as a path
/// string, or as an object with a path ("path", "file", "image", "image_name" or "url") and/or
/// "width" and "height"; an object with a size and no path is a metadata-only item (planning
/// before the media are fetched). The key comes from "key", "id", "__key__" or "sample_id",
/// else "<file>:<line>"; the source is left empty unless a canonical record names one.
/// Thread safety: one RecordParser per thread (it owns a reusable parse buffer).
class RecordParser {
 public:
  RecordParser();
  ~RecordParser();
  RecordParser(const RecordParser&) = delete;
  RecordParser& operator=(const RecordParser&) = delete;

  /// Parse one JSON line (without its '\n'). `format` kAuto detects it from the fields; the
  /// detected format is stored in `*detected` when given.
  /// Errors: Corrupt (not JSON, not UTF-8), InvalidArgument (a field missing or of the wrong
  /// type, markers and images that do not match, unknown format or kWebDataset, zero or absurd
  /// sizes); every message starts with "file:line: ".
  Result<store::Sample> Parse(std::string_view line, InputFormat format,
                              const RecordLocation& where, InputFormat* detected = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mmpt::ingest
