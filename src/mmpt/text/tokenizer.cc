#include "mmpt/text/tokenizer.h"

#include <cstdlib>
#include <filesystem>

#include "mmpt/core/data_dir.h"
#include "mmpt/core/mapped_file.h"
#include "mmpt/text/hf_tokenizer.h"
#include "mmpt/text/sentencepiece_tokenizer.h"

namespace mmpt::text {

Result<size_t> Tokenizer::Count(std::string_view text) const {
  MMPT_ASSIGN_OR_RETURN(std::vector<TokenId> ids, Encode(text));
  return ids.size();
}

bool Tokenizer::StartsWithAddedToken(std::string_view) const { return false; }
bool Tokenizer::EndsWithAddedToken(std::string_view) const { return false; }

Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path) {
  MMPT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  const std::string_view contents = file.text();
  // A tokenizer.json is a JSON object; a SentencePiece model is a binary protobuf.
  const size_t first = contents.find_first_not_of(" \t\r\n");
  const bool json =
      path.ends_with(".json") || (first != std::string_view::npos && contents[first] == '{');
  if (!json) return LoadSentencePieceTokenizer(path);
  if (contents.empty()) return Status::Corrupt("{}: empty file", path);
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<HfTokenizer> tokenizer, HfTokenizer::Parse(contents, path));
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

Result<std::string> FindTokenizer(std::string_view flag, std::string_view manifest) {
  if (!flag.empty()) return std::string(flag);
  if (!manifest.empty()) return std::string(manifest);
  if (const char* env = std::getenv("MMPT_TOKENIZER"); env != nullptr && env[0] != '\0')
    return std::string(env);
  auto dir = DataDir();
  std::string default_path = dir.ok() ? *dir + "/tokenizer.json" : "";
  std::error_code ec;
  if (dir.ok() && std::filesystem::is_regular_file(default_path, ec)) return default_path;
  return Status::NotFound(
      "no tokenizer: pass one with --tokenizer (Python: the path argument), use a dataset whose "
      "manifest records one, or set $MMPT_TOKENIZER; there is no default ({})",
      dir.ok() ? default_path + " does not exist" : dir.status().message());
}

}  // namespace mmpt::text
