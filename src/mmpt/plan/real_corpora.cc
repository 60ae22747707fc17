#include "mmpt/plan/real_corpora.h"

#include <memory>
#include <unordered_map>
#include <vector>

#include <simdjson.h>

#include "mmpt/plan/permutation.h"

namespace mmpt::plan {
namespace {

struct Mmc4Doc {
  uint32_t text_tokens = 0;  // Σ sentence tokens, each sentence encoded alone
  uint32_t images = 0;
};

Result<simdjson::padded_string> Load(const std::string& path) {
  simdjson::padded_string text;
  if (simdjson::padded_string::load(path).get(text) != simdjson::SUCCESS) {
    return Status::NotFound("{}: cannot read the real data file (is ../shared/data/real there?)",
                            path);
  }
  return text;
}

Result<std::vector<Mmc4Doc>> ReadMmc4(const std::string& data_dir,
                                      const CorpusTokenizer& tokenizer) {
  std::string path = data_dir + "/mmc4_core_ff_docs.jsonl";
  MMPT_ASSIGN_OR_RETURN(simdjson::padded_string text, Load(path));
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document_stream stream;
  if (parser.iterate_many(text).get(stream) != simdjson::SUCCESS) {
    return Status::Corrupt("{}: not JSONL", path);
  }
  std::vector<Mmc4Doc> docs;
  for (auto doc : stream) {
    Mmc4Doc d;
    simdjson::ondemand::array sentences, images;
    if (doc["text_list"].get_array().get(sentences) != simdjson::SUCCESS) {
      return Status::Corrupt("{}: document {} has no text_list", path, docs.size() + 1);
    }
    for (auto sentence : sentences) {
      std::string_view s;
      if (sentence.get_string().get(s) != simdjson::SUCCESS) {
        return Status::Corrupt("{}: document {}: a sentence is not a string", path,
                               docs.size() + 1);
      }
      auto tokens = tokenizer.TextTokens(s);
      if (!tokens.ok()) {
        return tokens.status().WithContext(fmt::format("{}: document {}", path, docs.size() + 1));
      }
      d.text_tokens += *tokens;
    }
    if (doc["image_info"].get_array().get(images) != simdjson::SUCCESS) {
      return Status::Corrupt("{}: document {} has no image_info", path, docs.size() + 1);
    }
    for (auto image : images) {
      (void)image;
      ++d.images;
    }
    docs.push_back(d);
  }
  if (docs.empty()) return Status::Corrupt("{}: no documents", path);
  return docs;
}

// COCO's images (real sizes, file order) and its caption annotations.
struct Coco {
  simdjson::padded_string text;
  simdjson::dom::parser parser;
  std::vector<cost::ImageSize> sizes;
  std::unordered_map<uint64_t, uint32_t> index_of_id;
  simdjson::dom::array annotations;
  std::string path;
};

Result<std::unique_ptr<Coco>> ReadCoco(const std::string& data_dir) {
  auto coco = std::make_unique<Coco>();
  coco->path = data_dir + "/coco_val2017_captions.json";
  const std::string& path = coco->path;
  MMPT_ASSIGN_OR_RETURN(coco->text, Load(path));
  simdjson::dom::element root;
  if (coco->parser.parse(coco->text).get(root) != simdjson::SUCCESS) {
    return Status::Corrupt("{}: not JSON", path);
  }
  simdjson::dom::array images;
  if (root["images"].get_array().get(images) != simdjson::SUCCESS ||
      root["annotations"].get_array().get(coco->annotations) != simdjson::SUCCESS) {
    return Status::Corrupt("{}: needs 'images' and 'annotations' arrays", path);
  }
  for (simdjson::dom::element image : images) {
    uint64_t id, w, h;
    if (image["id"].get_uint64().get(id) != simdjson::SUCCESS ||
        image["width"].get_uint64().get(w) != simdjson::SUCCESS ||
        image["height"].get_uint64().get(h) != simdjson::SUCCESS) {
      return Status::Corrupt("{}: image {} lacks id/width/height", path, coco->sizes.size() + 1);
    }
    coco->index_of_id[id] = static_cast<uint32_t>(coco->sizes.size());
    coco->sizes.push_back({static_cast<uint32_t>(w), static_cast<uint32_t>(h)});
  }
  if (coco->sizes.empty()) return Status::Corrupt("{}: no images", path);
  return coco;
}

Status AddMmc4(cost::SampleTableBuilder* builder, uint32_t source,
               const std::vector<Mmc4Doc>& docs, const Coco& coco, uint64_t seed,
               const CorpusTokenizer& tokenizer) {
  std::vector<cost::ImageSize> images;
  for (size_t d = 0; d < docs.size(); ++d) {
    images.clear();
    for (uint32_t i = 0; i < docs[d].images; ++i) {
      images.push_back(coco.sizes[Mmc4CocoImage(seed, d, i, coco.sizes.size())]);
    }
    uint32_t text = docs[d].text_tokens + tokenizer.image_marker_tokens() * docs[d].images +
                    CorpusTokenizer::kDocumentEndTokens;
    MMPT_RETURN_IF_ERROR(builder->Add(source, text, images));
  }
  return Status::OK();
}

Status AddCoco(cost::SampleTableBuilder* builder, uint32_t source, const Coco& coco,
               const CorpusTokenizer& tokenizer) {
  size_t k = 0;
  for (simdjson::dom::element annotation : coco.annotations) {
    ++k;
    uint64_t id;
    std::string_view caption;
    if (annotation["image_id"].get_uint64().get(id) != simdjson::SUCCESS ||
        annotation["caption"].get_string().get(caption) != simdjson::SUCCESS) {
      return Status::Corrupt("{}: annotation {} lacks image_id/caption", coco.path, k);
    }
    auto it = coco.index_of_id.find(id);
    if (it == coco.index_of_id.end()) {
      return Status::Corrupt("{}: annotation {} names unknown image {}", coco.path, k, id);
    }
    auto tokens = tokenizer.CaptionPairTokens(caption);
    if (!tokens.ok()) {
      return tokens.status().WithContext(fmt::format("{}: annotation {}", coco.path, k));
    }
    cost::ImageSize image[1] = {coco.sizes[it->second]};
    MMPT_RETURN_IF_ERROR(builder->Add(source, *tokens, image));
  }
  return Status::OK();
}

// The given tokenizer, or the process default.
Result<const CorpusTokenizer*> Resolve(const CorpusTokenizer* tokenizer) {
  if (tokenizer != nullptr) return tokenizer;
  return CorpusTokenizer::Default();
}

}  // namespace

std::string RealDataDir() { return MMPT_SOURCE_DIR "/../shared/data/real"; }

Result<CorpusTokenizer> CorpusTokenizer::Load(const std::string& tokenizer_path,
                                              const std::string& chat) {
  CorpusTokenizer out;
  auto tokenizer = text::LoadTokenizer(tokenizer_path);
  if (!tokenizer.ok()) {
    return tokenizer.status().WithContext(
        fmt::format("built-in corpora count tokens with {} (installed by "
                    "scripts/install-deps.sh)",
                    tokenizer_path));
  }
  out.tokenizer_ = std::move(*tokenizer);
  MMPT_ASSIGN_OR_RETURN(out.chat_, text::ChatTemplate::Load(chat));
  for (const std::string* marker : {&out.chat_.image_start, &out.chat_.image_end}) {
    if (!out.tokenizer_->TokenToId(*marker)) {
      return Status::InvalidArgument("chat template {}: the tokenizer has no token '{}'",
                                     out.chat_.name, *marker);
    }
    ++out.image_marker_tokens_;
  }
  return out;
}

Result<const CorpusTokenizer*> CorpusTokenizer::Default() {
  static const Result<CorpusTokenizer>* loaded =
      new Result<CorpusTokenizer>(Load(text::DefaultTokenizerPath()));
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

Result<uint32_t> CorpusTokenizer::TextTokens(std::string_view text) const {
  MMPT_ASSIGN_OR_RETURN(size_t count, tokenizer_->Count(text));
  return static_cast<uint32_t>(count);
}

Result<uint32_t> CorpusTokenizer::CaptionPairTokens(std::string_view caption) const {
  std::vector<text::ChatTurn> turns = {
      {"user", {text::ChatSegment::Image()}},
      {"assistant", {text::ChatSegment::Text(std::string(caption))}}};
  MMPT_ASSIGN_OR_RETURN(text::RenderedConversation rendered,
                        text::RenderConversation(chat_, *tokenizer_, turns, {0}));
  return static_cast<uint32_t>(rendered.ids.size());
}

uint64_t Mmc4CocoImage(uint64_t seed, uint64_t doc, uint64_t image, uint64_t num_coco_images) {
  return Mix64(seed ^ Mix64(doc * 1000003 + image)) % num_coco_images;
}

Result<cost::SampleTable> CocoCaptions(const std::string& data_dir,
                                       const CorpusTokenizer* tokenizer) {
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<Coco> coco, ReadCoco(data_dir));
  MMPT_ASSIGN_OR_RETURN(const CorpusTokenizer* tok, Resolve(tokenizer));
  cost::SampleTableBuilder builder;
  MMPT_RETURN_IF_ERROR(AddCoco(&builder, builder.AddSource("coco"), *coco, *tok));
  return std::move(builder).Finish();
}

Result<cost::SampleTable> Mmc4Documents(const std::string& data_dir, uint64_t seed,
                                        const CorpusTokenizer* tokenizer) {
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<Coco> coco, ReadCoco(data_dir));
  MMPT_ASSIGN_OR_RETURN(const CorpusTokenizer* tok, Resolve(tokenizer));
  MMPT_ASSIGN_OR_RETURN(std::vector<Mmc4Doc> docs, ReadMmc4(data_dir, *tok));
  cost::SampleTableBuilder builder;
  MMPT_RETURN_IF_ERROR(AddMmc4(&builder, builder.AddSource("mmc4"), docs, *coco, seed, *tok));
  return std::move(builder).Finish();
}

Result<cost::SampleTable> PretrainingMix(const std::string& data_dir, uint64_t seed,
                                         const CorpusTokenizer* tokenizer) {
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<Coco> coco, ReadCoco(data_dir));
  MMPT_ASSIGN_OR_RETURN(const CorpusTokenizer* tok, Resolve(tokenizer));
  MMPT_ASSIGN_OR_RETURN(std::vector<Mmc4Doc> docs, ReadMmc4(data_dir, *tok));
  cost::SampleTableBuilder builder;
  MMPT_RETURN_IF_ERROR(AddCoco(&builder, builder.AddSource("coco"), *coco, *tok));
  MMPT_RETURN_IF_ERROR(AddMmc4(&builder, builder.AddSource("mmc4"), docs, *coco, seed, *tok));
  uint32_t text = builder.AddSource("text");
  for (const Mmc4Doc& d : docs) {
    MMPT_RETURN_IF_ERROR(
        builder.Add(text, d.text_tokens + CorpusTokenizer::kDocumentEndTokens, {}));
  }
  uint32_t text_long = builder.AddSource("text-long");
  for (uint64_t k = 0; k < 512; ++k) {
    uint64_t h = Mix64(seed * 7919 + k);
    uint32_t parts = 4 + static_cast<uint32_t>(h % 37);
    uint64_t tokens = CorpusTokenizer::kDocumentEndTokens;
    for (uint32_t p = 0; p < parts; ++p) tokens += docs[Mix64(h + p) % docs.size()].text_tokens;
    MMPT_RETURN_IF_ERROR(builder.Add(text_long, static_cast<uint32_t>(tokens), {}));
  }
  return std::move(builder).Finish();
}

}  // namespace mmpt::plan
