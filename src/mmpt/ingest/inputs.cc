#include "mmpt/ingest/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>

#include "mmpt/ingest/webdataset.h"

namespace mmpt::ingest {
namespace fs = std::filesystem;
namespace {

Status CheckSourceName(std::string_view arg, const std::string& source) {
  bool safe = !source.empty() && source != "." && source != "..";
  for (char c : source) {
    safe =
        safe && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
  }
  if (safe) return Status::OK();
  return Status::InvalidArgument(
      "input '{}': source name '{}' must be letters, digits, '-', '_' or '.' (use NAME=PATH)", arg,
      source);
}

bool AllDigits(std::string_view text) {
  return !text.empty() && text.size() <= 18 &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool LeadingZero(std::string_view bound) { return bound.size() > 1 && bound[0] == '0'; }

// Append `path` with its brace ranges expanded (the first, then the rest recursively).
Status ExpandBraces(std::string_view arg, const std::string& path, std::vector<std::string>& out) {
  const size_t open = path.find('{');
  const size_t close = path.find('}', open == std::string::npos ? 0 : open);
  if (open == std::string::npos && path.find('}') == std::string::npos) {
    out.push_back(path);
    return Status::OK();
  }
  auto malformed = [&] {
    return Status::InvalidArgument(
        "input '{}': malformed brace in '{}': write a range as {{FIRST..LAST}}, digits with FIRST "
        "<= LAST (e.g. shard-{{0000..0999}}.tar)",
        arg, path);
  };
  if (open == std::string::npos || close == std::string::npos) return malformed();
  const std::string_view range = std::string_view(path).substr(open + 1, close - open - 1);
  const size_t dots = range.find("..");
  if (dots == std::string_view::npos) return malformed();
  const std::string_view first = range.substr(0, dots), last = range.substr(dots + 2);
  if (!AllDigits(first) || !AllDigits(last)) return malformed();
  const uint64_t begin = std::stoull(std::string(first)), end = std::stoull(std::string(last));
  if (begin > end) return malformed();
  if (end - begin >= kMaxBraceInputs || out.size() + (end - begin) >= kMaxBraceInputs) {
    return Status::InvalidArgument("input '{}': braces expand to more than {} files", arg,
                                   kMaxBraceInputs);
  }
  const size_t width =
      LeadingZero(first) || LeadingZero(last) ? std::max(first.size(), last.size()) : 1;
  for (uint64_t i = begin; i <= end; ++i) {
    const std::string number = fmt::format("{:0{}}", i, width);
    MMPT_RETURN_IF_ERROR(
        ExpandBraces(arg, path.substr(0, open) + number + path.substr(close + 1), out));
  }
  return Status::OK();
}

// The tar files of a directory, in name order.
Result<std::vector<std::string>> TarsIn(const std::string& dir) {
  std::vector<std::string> tars;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string path = entry.path().string();
    if (entry.is_regular_file() && IsWebDatasetPath(path)) tars.push_back(path);
  }
  if (error) return Status::IOError("{}: cannot list the directory: {}", dir, error.message());
  if (tars.empty()) return Status::NotFound("{}: no .tar, .tar.gz or .tgz files in it", dir);
  std::sort(tars.begin(), tars.end());
  return tars;
}

// The name of a directory given as `dir` ("data/laion/" → "laion"; "." → the current one's).
std::string DirectoryName(const std::string& dir) {
  fs::path path = fs::path(dir).lexically_normal();
  if (!path.has_filename()) path = path.parent_path();
  if (path.empty() || path.filename() == "." || path.filename() == "..") {
    path = fs::absolute(path).lexically_normal();
    if (!path.has_filename()) path = path.parent_path();
  }
  return path.filename().string();
}

// The shard set a tar path belongs to: its directory, its stem without the trailing digits, and
// its extensions; nullopt when digits do not end the stem.
std::optional<std::array<std::string, 3>> ShardSetOf(const std::string& path) {
  if (!IsWebDatasetPath(path)) return std::nullopt;
  const fs::path file(path);
  const std::string name = file.filename().string();
  const size_t dot = name.find('.');
  const std::string stem = name.substr(0, dot);
  size_t digits = stem.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(stem[digits - 1]))) --digits;
  if (digits == stem.size()) return std::nullopt;
  return std::array<std::string, 3>{file.parent_path().string(), stem.substr(0, digits),
                                    name.substr(dot)};
}

// The source of a shard set: its stem without trailing separators, or its directory's name.
std::string ShardSetName(const std::array<std::string, 3>& set) {
  std::string name = set[1];
  while (!name.empty() && (name.back() == '-' || name.back() == '_' || name.back() == '.')) {
    name.pop_back();
  }
  return name.empty() ? DirectoryName(set[0].empty() ? "." : set[0]) : name;
}

}  // namespace

Result<InputSpec> ParseInputSpec(std::string_view arg) {
  InputSpec spec;
  size_t eq = arg.find('=');
  if (eq != std::string_view::npos) {
    spec.source = std::string(arg.substr(0, eq));
    spec.path = std::string(arg.substr(eq + 1));
  } else {
    spec.path = std::string(arg);
    std::string name = fs::path(spec.path).filename().string();
    spec.source = name.substr(0, name.find('.'));
  }
  if (spec.path.empty()) return Status::InvalidArgument("input '{}' has no path", arg);
  MMPT_RETURN_IF_ERROR(CheckSourceName(arg, spec.source));
  return spec;
}

Result<std::vector<InputSpec>> ExpandInputs(std::span<const std::string> args) {
  std::vector<InputSpec> inputs;
  std::vector<bool> named;  // per input: the user named its source
  for (const std::string& arg : args) {
    const bool has_name = arg.find('=') != std::string::npos;
    const std::string path = has_name ? arg.substr(arg.find('=') + 1) : arg;
    std::vector<std::string> paths;
    MMPT_RETURN_IF_ERROR(ExpandBraces(arg, path, paths));
    for (const std::string& expanded : paths) {
      std::error_code error;
      const bool directory = fs::is_directory(expanded, error);
      const std::string prefix = has_name ? arg.substr(0, arg.find('=') + 1) : "";
      if (!directory) {
        MMPT_ASSIGN_OR_RETURN(InputSpec spec, ParseInputSpec(prefix + expanded));
        inputs.push_back(std::move(spec));
        named.push_back(has_name);
        continue;
      }
      const std::string source =
          has_name ? prefix.substr(0, prefix.size() - 1) : DirectoryName(expanded);
      MMPT_RETURN_IF_ERROR(CheckSourceName(arg, source));
      MMPT_ASSIGN_OR_RETURN(std::vector<std::string> tars, TarsIn(expanded));
      for (std::string& tar : tars) {
        inputs.push_back({std::move(tar), source});
        named.push_back(true);
      }
    }
  }
  std::map<std::array<std::string, 3>, size_t> set_sizes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (auto set = ShardSetOf(inputs[i].path); set && !named[i]) ++set_sizes[*set];
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto set = ShardSetOf(inputs[i].path);
    if (!set || named[i] || set_sizes[*set] < 2) continue;
    inputs[i].source = ShardSetName(*set);
    MMPT_RETURN_IF_ERROR(CheckSourceName(inputs[i].path, inputs[i].source));
  }
  return inputs;
}

}  // namespace mmpt::ingest
