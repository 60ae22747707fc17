#pragma once

// prepare's input arguments → input files, each with the source its samples belong to:
// NAME=PATH, Energon's brace ranges, directories of tars, and WebDataset shard sets.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::ingest {

/// One input file and the source its samples belong to: JSONL, or a WebDataset tar shard
/// (webdataset.h) when named .tar, .tar.gz or .tgz or under InputFormat::kWebDataset.
struct InputSpec {
  std::string path;
  std::string source;  // a directory name: letters, digits, '-', '_', '.'
};

/// Parse "NAME=PATH" or "PATH" (the source is then the file name without its extensions).
/// Errors: InvalidArgument for an empty path or a source name that is not a safe directory name.
Result<InputSpec> ParseInputSpec(std::string_view arg);

/// Most files one argument's brace ranges may expand to.
inline constexpr uint64_t kMaxBraceInputs = uint64_t{1} << 20;

/// Expand `mmpt prepare`'s input arguments, in order, into input files:
/// - "NAME=PATH" gives every file of PATH the source NAME; "PATH" takes it as ParseInputSpec does,
///   except as below.
/// - Brace ranges in PATH, Energon's form "shard-{0000..0999}.tar", expand in order; a bound
///   written with a leading zero pads every number to the wider bound's width.
/// - A directory PATH stands for its tar files (.tar, .tar.gz, .tgz; not recursive) in name
///   order, one source named by the directory.
/// - Unnamed tar paths "<stem><digits><ext>" that share their directory, stem and extensions
///   with another unnamed input are one shard set, one source named by the stem without trailing
///   '-', '_' or '.' ("shard-0000.tar" … → "shard"), or by the directory when that leaves none.
/// Errors: InvalidArgument (a malformed brace, naming it; more than kMaxBraceInputs files; as
/// ParseInputSpec), NotFound (a directory with no tar files), IOError (an unreadable directory).
Result<std::vector<InputSpec>> ExpandInputs(std::span<const std::string> args);

}  // namespace mmpt::ingest
