// `mmpt tokenize`: text → token ids (or counts), for users and scripts: one text per input line,
// the whole input as one text (--whole), or one JSON text per line (--jsonl, for texts that hold
// newlines).
#include <simdjson.h>

#include <cstdio>
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
  bool jsonl = false;
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

// The text of one --jsonl line: a JSON string, or an object with a string "text".
Result<std::string_view> JsonText(simdjson::dom::parser& parser, std::string_view line,
                                  size_t line_number) {
  simdjson::dom::element element;
  if (parser.parse(line.data(), line.size()).get(element)) {
    return Status::InvalidArgument("line {}: not JSON", line_number);
  }
  std::string_view text;
  if (!element.get(text)) return text;
  if (!element["text"].get(text)) return text;
  return Status::InvalidArgument("line {}: expected a JSON string or {{\"text\": string}}",
                                 line_number);
}

Status Run(const TokenizeOptions& options) {
  MMPT_ASSIGN_OR_RETURN(const std::string path, text::FindTokenizer(options.tokenizer));
  MMPT_ASSIGN_OR_RETURN(auto tokenizer, text::LoadTokenizer(path));
  MMPT_ASSIGN_OR_RETURN(std::string input, ReadInput(options.input));
  std::string out;
  auto emit = [&](std::string_view text) -> Status {
    MMPT_ASSIGN_OR_RETURN(std::vector<text::TokenId> ids, tokenizer->Encode(text));
    if (options.count) {
      out += std::to_string(ids.size());
    } else {
      // --jsonl writes a JSON array per line; otherwise ids are space-separated.
      const char separator = options.jsonl ? ',' : ' ';
      if (options.jsonl) out += '[';
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) out += separator;
        out += std::to_string(ids[i]);
      }
      if (options.jsonl) out += ']';
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
    simdjson::dom::parser parser;
    size_t pos = 0;
    size_t line_number = 0;
    while (pos < input.size()) {
      size_t end = input.find('\n', pos);
      if (end == std::string::npos) end = input.size();
      const std::string_view line = std::string_view(input).substr(pos, end - pos);
      ++line_number;
      pos = end + 1;
      if (!options.jsonl) {
        MMPT_RETURN_IF_ERROR(emit(line));
        continue;
      }
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      auto text = JsonText(parser, line, line_number);
      if (!text.ok()) {
        return text.status().WithContext(options.input == "-" ? "standard input" : options.input);
      }
      MMPT_RETURN_IF_ERROR(emit(*text));
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0) return Status::IOError("writing standard output failed");
  return Status::OK();
}

}  // namespace

Command TokenizeCommand() {
  return {
      "tokenize",
      "Turn text into token ids: one text per input line, the whole input (--whole), or one JSON "
      "text per line (--jsonl)",
      [](CLI::App& app) -> Action {
        auto options = std::make_shared<TokenizeOptions>();
        app.add_option("--tokenizer", options->tokenizer,
                       "tokenizer.json (byte-level BPE) or SentencePiece .model; default: "
                       "$MMPT_TOKENIZER, else Qwen3's");
        auto* count =
            app.add_flag("--count", options->count, "Print the number of tokens of each text");
        app.add_flag("--ids", options->ids,
                     "Print the token ids of each text (the default): space-separated, or with "
                     "--jsonl one JSON array per line")
            ->excludes(count);
        auto* whole = app.add_flag("--whole", options->whole,
                                   "Encode the whole input as one text instead of one per line");
        app.add_flag("--jsonl", options->jsonl,
                     "Read one text per line as JSON: a string, or an object with a \"text\" "
                     "string (so a text may hold newlines); blank lines are skipped. Prints one "
                     "JSON array of ids (or a count) per text, in order")
            ->excludes(whole);
        app.add_option("input", options->input, "Input file, or - for standard input")
            ->capture_default_str();
        return [options] { return Run(*options); };
      },
  };
}

}  // namespace mmpt::cli
