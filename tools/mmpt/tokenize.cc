// `mmpt tokenize`: text → token ids (or counts), one input line per text, for users and scripts.
#include <cstdio>
#include <iostream>
#include <string>

#include "command.h"
#include "mmpt/core/mapped_file.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::cli {
namespace {

struct TokenizeOptions {
  std::string tokenizer;
  std::string input = "-";
  bool count = false;
  bool ids = false;
  bool whole = false;
};

Result<std::string> ReadInput(const std::string& input) {
  if (input != "-") return ReadFileToString(input);
  std::string text;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), stdin)) > 0) text.append(buffer, n);
  if (std::ferror(stdin)) return Status::IOError("reading standard input failed");
  return text;
}

Status Run(const TokenizeOptions& options) {
  const std::string path = options.tokenizer.empty() ? text::DefaultTokenizerPath() : options.tokenizer;
  MMPT_ASSIGN_OR_RETURN(auto tokenizer, text::LoadTokenizer(path));
  MMPT_ASSIGN_OR_RETURN(std::string input, ReadInput(options.input));
  std::string out;
  auto emit = [&](std::string_view text) -> Status {
    MMPT_ASSIGN_OR_RETURN(std::vector<text::TokenId> ids, tokenizer->Encode(text));
    if (options.count) {
      out += std::to_string(ids.size());
    } else {
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) out += ' ';
        out += std::to_string(ids[i]);
      }
    }
    out += '\n';
    if (out.size() > (1 << 20)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
    return Status::OK();
  };
  if (options.whole) {
    MMPT_RETURN_IF_ERROR(emit(input));
  } else {
    size_t pos = 0;
    while (pos < input.size()) {
      size_t end = input.find('\n', pos);
      if (end == std::string::npos) end = input.size();
      MMPT_RETURN_IF_ERROR(emit(std::string_view(input).substr(pos, end - pos)));
      pos = end + 1;
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0) return Status::IOError("writing standard output failed");
  return Status::OK();
}

const bool registered = RegisterCommand({
    "tokenize",
    "Turn text into token ids (one input line per text)",
    [](CLI::App& app) -> Action {
      auto options = std::make_shared<TokenizeOptions>();
      app.add_option("--tokenizer", options->tokenizer,
                     "tokenizer.json (byte-level BPE) or SentencePiece .model; default: Qwen3's, or $MMPT_TOKENIZER");
      auto* count = app.add_flag("--count", options->count, "Print the number of tokens of each text");
      app.add_flag("--ids", options->ids, "Print the token ids of each text, space-separated (the default)")
          ->excludes(count);
      app.add_flag("--whole", options->whole, "Encode the whole input as one text instead of one per line");
      app.add_option("input", options->input, "Input file, or - for standard input")->capture_default_str();
      return [options] { return Run(*options); };
    },
});

}  // namespace
}  // namespace mmpt::cli
