#include "mmpt/corpora/omni_tokenizer.h"

#include <fmt/format.h>

#include <span>
#include <string_view>

#include "mmpt/core/mapped_file.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::corpora {

namespace {

// One Omni token: the base tokenizer's token it renames (nullptr: a token to add) and its id.
struct OmniToken {
  const char* base;
  const char* omni;
  text::TokenId id;
};

constexpr OmniToken kQwen25Omni[] = {
    {"<|object_ref_start|>", "<|AUDIO|>", 151646}, {"<|object_ref_end|>", "<|audio_bos|>", 151647},
    {"<|box_start|>", "<|audio_eos|>", 151648},    {"<|vision_start|>", "<|vision_bos|>", 151652},
    {"<|vision_end|>", "<|vision_eos|>", 151653},  {"<|image_pad|>", "<|IMAGE|>", 151655},
    {"<|video_pad|>", "<|VIDEO|>", 151656},
};

constexpr OmniToken kQwen3Omni[] = {
    {nullptr, "<|audio_start|>", 151669},
    {nullptr, "<|audio_end|>", 151670},
    {nullptr, "<|audio_pad|>", 151675},
};

std::span<const OmniToken> TokensOf(OmniModel model) {
  return model == OmniModel::kQwen25Omni ? std::span<const OmniToken>(kQwen25Omni)
                                         : std::span<const OmniToken>(kQwen3Omni);
}

std::string_view NameOf(OmniModel model) {
  return model == OmniModel::kQwen25Omni ? "Qwen2.5-Omni" : "Qwen3-Omni";
}

// The offset of the `]` that closes the JSON array opening at `open` (a `[`), skipping
// strings; npos when the text ends first.
size_t ArrayEnd(std::string_view json, size_t open) {
  int depth = 0;
  for (size_t i = open; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '"') {
      for (++i; i < json.size() && json[i] != '"'; ++i) i += json[i] == '\\';
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

// Rename `token.base` (a JSON string found exactly once: Qwen's tokenizer.json names its
// special tokens nowhere but in added_tokens) to `token.omni`.
Status Rename(std::string& json, const OmniToken& token, const std::string& base_path) {
  const std::string from = fmt::format("\"{}\"", token.base);
  const size_t at = json.find(from);
  if (at == std::string::npos || json.find(from, at + 1) != std::string::npos) {
    return Status::InvalidArgument(
        "{}: not a Qwen2/Qwen3 tokenizer.json (the token {} is not there exactly once)", base_path,
        token.base);
  }
  json.replace(at, from.size(), fmt::format("\"{}\"", token.omni));
  return Status::OK();
}

// Append `token` to the added_tokens array, as a special token matched verbatim.
Status Add(std::string& json, const OmniToken& token, const std::string& base_path) {
  const size_t key = json.find("\"added_tokens\"");
  const size_t open = key == std::string::npos ? key : json.find('[', key);
  const size_t close = open == std::string::npos ? open : ArrayEnd(json, open);
  if (close == std::string::npos) {
    return Status::InvalidArgument("{}: no added_tokens array to add {} to", base_path, token.omni);
  }
  if (json.find(fmt::format("\"{}\"", token.omni)) != std::string::npos) {
    return Status::InvalidArgument("{}: already holds the token {}", base_path, token.omni);
  }
  const size_t last = json.find_last_not_of(" \t\r\n", close - 1);
  const bool empty = last == open;
  json.insert(last + 1, fmt::format("{}{{\"id\": {}, \"content\": \"{}\", \"single_word\": false, "
                                    "\"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
                                    "\"special\": true}}",
                                    empty ? "" : ", ", token.id, token.omni));
  return Status::OK();
}

}  // namespace

Status WriteOmniTokenizer(const std::string& base_path, const std::string& out_path,
                          OmniModel model) {
  MMPT_ASSIGN_OR_RETURN(std::string json, ReadFileToString(base_path));
  for (const OmniToken& token : TokensOf(model)) {
    MMPT_RETURN_IF_ERROR(token.base != nullptr ? Rename(json, token, base_path)
                                               : Add(json, token, base_path));
  }
  MMPT_RETURN_IF_ERROR(WriteFileAtomic(out_path, json));
  MMPT_ASSIGN_OR_RETURN(auto tokenizer, text::LoadTokenizer(out_path));
  for (const OmniToken& token : TokensOf(model)) {
    if (tokenizer->TokenToId(token.omni) != token.id) {
      return Status::InvalidArgument("{}: {} is not at id {} as in {}", base_path, token.omni,
                                     token.id, NameOf(model));
    }
  }
  return Status::OK();
}

}  // namespace mmpt::corpora
