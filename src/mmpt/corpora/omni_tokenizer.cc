#include "mmpt/corpora/omni_tokenizer.h"

#include <fmt/format.h>

#include "mmpt/core/mapped_file.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::corpora {

namespace {

struct Rename {
  const char* qwen;  // the Qwen2/Qwen3 name
  const char* omni;  // Qwen2.5-Omni's
  text::TokenId id;
};

constexpr Rename kRenames[] = {
    {"<|object_ref_start|>", "<|AUDIO|>", 151646}, {"<|object_ref_end|>", "<|audio_bos|>", 151647},
    {"<|box_start|>", "<|audio_eos|>", 151648},    {"<|vision_start|>", "<|vision_bos|>", 151652},
    {"<|vision_end|>", "<|vision_eos|>", 151653},  {"<|image_pad|>", "<|IMAGE|>", 151655},
    {"<|video_pad|>", "<|VIDEO|>", 151656},
};

}  // namespace

Status WriteOmniTokenizer(const std::string& base_path, const std::string& out_path) {
  MMPT_ASSIGN_OR_RETURN(std::string json, ReadFileToString(base_path));
  for (const Rename& r : kRenames) {
    // The token's content as a JSON string: the added_tokens entry (Qwen's tokenizer.json
    // names its special tokens nowhere else).
    const std::string from = fmt::format("\"{}\"", r.qwen);
    const size_t at = json.find(from);
    if (at == std::string::npos || json.find(from, at + 1) != std::string::npos) {
      return Status::InvalidArgument(
          "{}: not a Qwen2/Qwen3 tokenizer.json (the token {} is not there exactly once)",
          base_path, r.qwen);
    }
    json.replace(at, from.size(), fmt::format("\"{}\"", r.omni));
  }
  MMPT_RETURN_IF_ERROR(WriteFileAtomic(out_path, json));
  MMPT_ASSIGN_OR_RETURN(auto tokenizer, text::LoadTokenizer(out_path));
  for (const Rename& r : kRenames) {
    if (tokenizer->TokenToId(r.omni) != r.id) {
      return Status::InvalidArgument("{}: {} is not at id {} as in Qwen2.5-Omni", base_path, r.qwen,
                                     r.id);
    }
  }
  return Status::OK();
}

}  // namespace mmpt::corpora
