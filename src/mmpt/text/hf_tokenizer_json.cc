// HfTokenizer::Parse: reading a `tokenizer.json` (simdjson DOM) into the tokenizer's parts.
#include <simdjson.h>

#include "mmpt/text/hf_tokenizer.h"

namespace mmpt::text {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Errors name the file and the JSON path of the field at fault.
class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  Status Corrupt(std::string_view path, std::string_view what) const {
    return Status::Corrupt("{}: {}: {}", source_, path, what);
  }
  Status Unsupported(std::string_view path, std::string_view what) const {
    return Status::InvalidArgument("{}: {}: {}", source_, path, what);
  }

  // The field `key` of `obj`, or nullopt when absent or null.
  std::optional<element> Optional(object obj, std::string_view key) const {
    element value;
    if (obj[key].get(value) != simdjson::SUCCESS || value.is_null()) return std::nullopt;
    return value;
  }
  Result<object> Object(element value, std::string_view path) const {
    object obj;
    if (value.get(obj) != simdjson::SUCCESS) return Corrupt(path, "expected an object");
    return obj;
  }
  Result<array> Array(element value, std::string_view path) const {
    array arr;
    if (value.get(arr) != simdjson::SUCCESS) return Corrupt(path, "expected an array");
    return arr;
  }
  Result<std::string_view> String(element value, std::string_view path) const {
    std::string_view text;
    if (value.get(text) != simdjson::SUCCESS) return Corrupt(path, "expected a string");
    return text;
  }
  Result<int64_t> Int(element value, std::string_view path) const {
    int64_t number = 0;
    if (value.get(number) != simdjson::SUCCESS) return Corrupt(path, "expected an integer");
    return number;
  }
  // A boolean field; `fallback` when absent or null.
  Result<bool> Bool(object obj, std::string_view key, std::string_view path, bool fallback) const {
    auto value = Optional(obj, key);
    if (!value) return fallback;
    bool flag = false;
    if (value->get(flag) != simdjson::SUCCESS)
      return Corrupt(std::string(path) + "." + std::string(key), "expected a boolean");
    return flag;
  }
  Result<std::string_view> Type(object obj, std::string_view path) const {
    auto value = Optional(obj, "type");
    if (!value) return Corrupt(path, "missing \"type\"");
    return String(*value, std::string(path) + ".type");
  }

 private:
  const std::string& source_;
};

std::string EscapeRegexLiteral(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    const bool plain = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       static_cast<unsigned char>(c) >= 0x80;
    if (!plain) out += '\\';
    out += c;
  }
  return out;
}

Result<std::unique_ptr<Normalizer>> ParseNormalizer(const Reader& r, element value,
                                                    const std::string& path) {
  MMPT_ASSIGN_OR_RETURN(object obj, r.Object(value, path));
  MMPT_ASSIGN_OR_RETURN(std::string_view type, r.Type(obj, path));
  std::vector<std::unique_ptr<Normalizer>> children;
  if (type == "Sequence") {
    auto list = r.Optional(obj, "normalizers");
    if (!list) return r.Corrupt(path, "Sequence without \"normalizers\"");
    MMPT_ASSIGN_OR_RETURN(array items, r.Array(*list, path + ".normalizers"));
    size_t i = 0;
    for (element item : items) {
      MMPT_ASSIGN_OR_RETURN(auto child,
                            ParseNormalizer(r, item, fmt::format("{}.normalizers[{}]", path, i++)));
      children.push_back(std::move(child));
    }
  }
  auto normalizer = Normalizer::Create(type, std::move(children));
  if (!normalizer.ok()) return normalizer.status().WithContext(path);
  return normalizer;
}

// Flatten the pre-tokenizer tree into Split stages followed by one final ByteLevel.
struct PreTokenizerParts {
  std::vector<SplitStage> splits;
  bool byte_level = false;
  bool add_prefix_space = false;
  bool use_regex = true;
};

Status ParsePreTokenizer(const Reader& r, element value, const std::string& path,
                         PreTokenizerParts* parts) {
  MMPT_ASSIGN_OR_RETURN(object obj, r.Object(value, path));
  MMPT_ASSIGN_OR_RETURN(std::string_view type, r.Type(obj, path));
  if (type == "Sequence") {
    auto list = r.Optional(obj, "pretokenizers");
    if (!list) return r.Corrupt(path, "Sequence without \"pretokenizers\"");
    MMPT_ASSIGN_OR_RETURN(array items, r.Array(*list, path + ".pretokenizers"));
    size_t i = 0;
    for (element item : items) {
      MMPT_RETURN_IF_ERROR(
          ParsePreTokenizer(r, item, fmt::format("{}.pretokenizers[{}]", path, i++), parts));
    }
    return Status::OK();
  }
  if (parts->byte_level) {
    return r.Unsupported(path,
                         fmt::format("pre-tokenizer '{}' after ByteLevel is not supported", type));
  }
  if (type == "ByteLevel") {
    parts->byte_level = true;
    // The reference reads add_prefix_space as given (absent: false); use_regex defaults to true.
    MMPT_ASSIGN_OR_RETURN(parts->add_prefix_space, r.Bool(obj, "add_prefix_space", path, false));
    MMPT_ASSIGN_OR_RETURN(parts->use_regex, r.Bool(obj, "use_regex", path, true));
    return Status::OK();
  }
  if (type != "Split") {
    return r.Unsupported(path + ".type", fmt::format("pre-tokenizer type '{}' is not supported "
                                                     "(supported: Sequence, Split, ByteLevel)",
                                                     type));
  }
  auto pattern_value = r.Optional(obj, "pattern");
  if (!pattern_value) return r.Corrupt(path, "Split without \"pattern\"");
  MMPT_ASSIGN_OR_RETURN(object pattern_obj, r.Object(*pattern_value, path + ".pattern"));
  std::string pattern;
  if (auto regex = r.Optional(pattern_obj, "Regex")) {
    MMPT_ASSIGN_OR_RETURN(std::string_view text, r.String(*regex, path + ".pattern.Regex"));
    pattern = std::string(text);
  } else if (auto literal = r.Optional(pattern_obj, "String")) {
    MMPT_ASSIGN_OR_RETURN(std::string_view text, r.String(*literal, path + ".pattern.String"));
    pattern = EscapeRegexLiteral(text);
  } else {
    return r.Corrupt(path + ".pattern", "expected \"Regex\" or \"String\"");
  }
  auto compiled = Regex::Compile(pattern);
  if (!compiled.ok()) return compiled.status().WithContext(path + ".pattern");
  auto behavior = r.Optional(obj, "behavior");
  if (!behavior) return r.Corrupt(path, "Split without \"behavior\"");
  MMPT_ASSIGN_OR_RETURN(std::string_view behavior_name, r.String(*behavior, path + ".behavior"));
  auto parsed = ParseSplitBehavior(behavior_name);
  if (!parsed.ok()) return parsed.status().WithContext(path + ".behavior");
  MMPT_ASSIGN_OR_RETURN(bool invert, r.Bool(obj, "invert", path, false));
  SplitStage stage{std::move(compiled).ValueOrDie(), *parsed, invert};
  parts->splits.push_back(std::move(stage));
  return Status::OK();
}

// The model's options: BPE, no dropout, byte fallback, prefix or suffix (what Encode does not
// do); returns ignore_merges.
Result<bool> CheckModelOptions(const Reader& r, object model) {
  if (auto type = r.Optional(model, "type")) {
    MMPT_ASSIGN_OR_RETURN(std::string_view name, r.String(*type, "model.type"));
    if (name != "BPE")
      return r.Unsupported("model.type",
                           fmt::format("model type '{}' is not supported (only BPE)", name));
  }
  if (r.Optional(model, "dropout"))
    return r.Unsupported("model.dropout", "BPE dropout is not supported");
  MMPT_ASSIGN_OR_RETURN(bool byte_fallback, r.Bool(model, "byte_fallback", "model", false));
  if (byte_fallback) return r.Unsupported("model.byte_fallback", "byte_fallback is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (auto value = r.Optional(model, key)) {
      MMPT_ASSIGN_OR_RETURN(std::string_view text, r.String(*value, std::string("model.") + key));
      if (!text.empty())
        return r.Unsupported(std::string("model.") + key, "a non-empty value is not supported");
    }
  }
  return r.Bool(model, "ignore_merges", "model", false);
}

// model.vocab and model.merges into `bpe` (ids below `id_bound`).
Status ParseVocabAndMerges(const Reader& r, object model, object vocab, int64_t id_bound,
                           const std::string& source, BpeModel& bpe) {
  if (auto early = r.Optional(model, "merges"); early && early->is_array()) {
    bpe.Reserve(vocab.size(), early->get_array().value_unsafe().size());
  }
  for (auto field : vocab) {
    const std::string_view key = field.key;
    const element value = field.value;
    MMPT_ASSIGN_OR_RETURN(int64_t id, r.Int(value, fmt::format("model.vocab[\"{}\"]", key)));
    if (id < 0 || id >= id_bound)
      return r.Corrupt(fmt::format("model.vocab[\"{}\"]", key),
                       fmt::format("id {} out of range", id));
    MMPT_RETURN_IF_ERROR(bpe.AddToken(key, TokenId(id)));
  }

  auto merges_value = r.Optional(model, "merges");
  if (!merges_value) return r.Corrupt("model.merges", "missing");
  MMPT_ASSIGN_OR_RETURN(array merges, r.Array(*merges_value, "model.merges"));
  int32_t rank = 0;
  for (element merge : merges) {
    const std::string path = fmt::format("model.merges[{}]", rank);
    std::string_view left, right;
    if (merge.is_string()) {  // "left right" (tokenizers < 0.20)
      MMPT_ASSIGN_OR_RETURN(std::string_view line, r.String(merge, path));
      const size_t space = line.find(' ');
      if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos) {
        return r.Corrupt(path,
                         fmt::format("expected two tokens separated by one space, got '{}'", line));
      }
      left = line.substr(0, space);
      right = line.substr(space + 1);
    } else {  // ["left", "right"] (tokenizers >= 0.20)
      MMPT_ASSIGN_OR_RETURN(array pair, r.Array(merge, path));
      if (pair.size() != 2) return r.Corrupt(path, "expected a pair of tokens");
      MMPT_ASSIGN_OR_RETURN(left, r.String(pair.at(0).value_unsafe(), path + "[0]"));
      MMPT_ASSIGN_OR_RETURN(right, r.String(pair.at(1).value_unsafe(), path + "[1]"));
    }
    Status status = bpe.AddMerge(left, right, rank);
    if (!status.ok()) return status.WithContext(fmt::format("{}: {}", source, path));
    ++rank;
  }
  return Status::OK();
}

// added_tokens (ids below `id_bound`), in file order.
Result<std::vector<AddedToken>> ParseAddedTokens(const Reader& r, array list, int64_t id_bound) {
  std::vector<AddedToken> added;
  size_t i = 0;
  for (element item : list) {
    const std::string path = fmt::format("added_tokens[{}]", i++);
    MMPT_ASSIGN_OR_RETURN(object obj, r.Object(item, path));
    AddedToken token;
    auto content = r.Optional(obj, "content");
    auto id = r.Optional(obj, "id");
    if (!content || !id) return r.Corrupt(path, "needs \"id\" and \"content\"");
    MMPT_ASSIGN_OR_RETURN(std::string_view text, r.String(*content, path + ".content"));
    MMPT_ASSIGN_OR_RETURN(int64_t number, r.Int(*id, path + ".id"));
    if (number < 0 || number >= id_bound)
      return r.Corrupt(path + ".id", fmt::format("id {} out of range", number));
    if (text.empty()) return r.Corrupt(path + ".content", "empty");
    token.content = std::string(text);
    token.id = TokenId(number);
    MMPT_ASSIGN_OR_RETURN(token.lstrip, r.Bool(obj, "lstrip", path, false));
    MMPT_ASSIGN_OR_RETURN(token.rstrip, r.Bool(obj, "rstrip", path, false));
    MMPT_ASSIGN_OR_RETURN(token.special, r.Bool(obj, "special", path, false));
    added.push_back(std::move(token));
  }
  return added;
}

// pre_tokenizer: Split stages, then ByteLevel (required: the model works on bytes).
Result<std::unique_ptr<PreTokenizer>> ParsePreTokenizerOf(const Reader& r, object top) {
  PreTokenizerParts parts;
  if (auto value = r.Optional(top, "pre_tokenizer")) {
    MMPT_RETURN_IF_ERROR(ParsePreTokenizer(r, *value, "pre_tokenizer", &parts));
  }
  if (!parts.byte_level) {
    return r.Unsupported("pre_tokenizer",
                         "no ByteLevel pre-tokenizer; only byte-level BPE is supported");
  }
  std::optional<Regex> byte_level_regex;
  if (parts.use_regex) {
    MMPT_ASSIGN_OR_RETURN(Regex regex, Regex::Compile(PreTokenizer::kGpt2Pattern));
    byte_level_regex = std::move(regex);
  }
  return std::make_unique<PreTokenizer>(std::move(parts.splits), parts.add_prefix_space,
                                        std::move(byte_level_regex));
}

// decoder: ByteLevel only. post_processor: not applied by Encode (docs/tokenizer.md).
Status CheckDecoder(const Reader& r, object top) {
  auto decoder = r.Optional(top, "decoder");
  if (!decoder) return r.Unsupported("decoder", "missing; only the ByteLevel decoder is supported");
  MMPT_ASSIGN_OR_RETURN(object decoder_obj, r.Object(*decoder, "decoder"));
  MMPT_ASSIGN_OR_RETURN(std::string_view decoder_type, r.Type(decoder_obj, "decoder"));
  if (decoder_type != "ByteLevel") {
    return r.Unsupported(
        "decoder.type",
        fmt::format("decoder type '{}' is not supported (only ByteLevel)", decoder_type));
  }

  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::Parse(std::string_view json,
                                                        const std::string& source) {
  const Reader r(source);
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json);
  element root;
  if (auto error = parser.parse(padded).get(root); error != simdjson::SUCCESS) {
    return Status::Corrupt("{}: malformed JSON: {}", source, simdjson::error_message(error));
  }
  MMPT_ASSIGN_OR_RETURN(object top, r.Object(root, "(root)"));
  std::unique_ptr<HfTokenizer> tokenizer(new HfTokenizer());

  auto model_value = r.Optional(top, "model");
  if (!model_value) return r.Corrupt("model", "missing");
  MMPT_ASSIGN_OR_RETURN(object model, r.Object(*model_value, "model"));
  MMPT_ASSIGN_OR_RETURN(bool ignore_merges, CheckModelOptions(r, model));
  auto added_value = r.Optional(top, "added_tokens");
  array added_list;
  if (added_value) {
    MMPT_ASSIGN_OR_RETURN(added_list, r.Array(*added_value, "added_tokens"));
  }
  auto vocab_value = r.Optional(model, "vocab");
  if (!vocab_value) return r.Corrupt("model.vocab", "missing");
  MMPT_ASSIGN_OR_RETURN(object vocab, r.Object(*vocab_value, "model.vocab"));
  // Ids are dense in real vocabularies; a bound keeps a hostile file from forcing a huge table.
  const size_t added_count = added_value ? added_list.size() : 0;
  const int64_t id_bound = int64_t(vocab.size() + added_count) * 2 + 1024;
  MMPT_RETURN_IF_ERROR(ParseVocabAndMerges(r, model, vocab, id_bound, source, tokenizer->model_));
  tokenizer->model_.Finish(ignore_merges);
  if (added_value) {
    MMPT_ASSIGN_OR_RETURN(tokenizer->added_, ParseAddedTokens(r, added_list, id_bound));
  }
  for (const AddedToken& token : tokenizer->added_) tokenizer->added_ids_[token.content] = token.id;
  tokenizer->matcher_ = std::make_unique<AddedTokenMatcher>(tokenizer->added_);
  if (auto value = r.Optional(top, "normalizer")) {
    MMPT_ASSIGN_OR_RETURN(tokenizer->normalizer_, ParseNormalizer(r, *value, "normalizer"));
  }
  MMPT_ASSIGN_OR_RETURN(tokenizer->pre_tokenizer_, ParsePreTokenizerOf(r, top));
  MMPT_RETURN_IF_ERROR(CheckDecoder(r, top));

  // Decode table: model tokens decode to their bytes, added tokens to their content.
  size_t limit = tokenizer->model_.id_limit();
  for (const AddedToken& token : tokenizer->added_) limit = std::max(limit, size_t(token.id) + 1);
  tokenizer->decode_table_.assign(limit, nullptr);
  for (size_t id = 0; id < tokenizer->model_.id_limit(); ++id) {
    tokenizer->decode_table_[id] = tokenizer->model_.TokenBytes(TokenId(id));
  }
  for (const AddedToken& token : tokenizer->added_)
    tokenizer->decode_table_[token.id] = &token.content;
  return tokenizer;
}

}  // namespace mmpt::text
