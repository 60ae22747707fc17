#include "mmpt/corpora/real_corpora.h"

#include <memory>
#include <vector>

#include "mmpt/core/hash.h"
#include "mmpt/corpora/real_data.h"

namespace mmpt::corpora {
namespace {

// The COCO file, with its image sizes (file order) as the cost model takes them.
struct CocoFile {
  corpora::CocoCaptions coco;
  std::vector<cost::ImageSize> sizes;  // of coco.images
  std::string coco_path;
};

Result<CocoFile> ReadCoco(const std::string& data_dir) {
  CocoFile files;
  files.coco_path = data_dir + "/" + corpora::kCocoCaptionsFile;
  MMPT_ASSIGN_OR_RETURN(files.coco, corpora::ReadCocoCaptions(files.coco_path));
  files.sizes.reserve(files.coco.images.size());
  for (const corpora::CocoImage& image : files.coco.images) {
    files.sizes.push_back({image.width, image.height});
  }
  return files;
}

struct Mmc4Doc {
  uint32_t text_tokens = 0;  // Σ sentence tokens, each sentence encoded alone
  uint32_t images = 0;
};

Result<std::vector<Mmc4Doc>> ReadMmc4(const std::string& data_dir,
                                      const CorpusTokenizer& tokenizer) {
  const std::string path = data_dir + "/" + corpora::kMmc4DocsFile;
  MMPT_ASSIGN_OR_RETURN(std::vector<corpora::Mmc4Document> documents,
                        corpora::ReadMmc4Documents(path));
  if (documents.empty()) return Status::Corrupt("{}: no documents", path);
  std::vector<Mmc4Doc> docs;
  docs.reserve(documents.size());
  for (const corpora::Mmc4Document& document : documents) {
    Mmc4Doc d;
    for (const std::string& sentence : document.sentences) {
      auto tokens = tokenizer.TextTokens(sentence);
      if (!tokens.ok()) {
        return tokens.status().WithContext(fmt::format("{}:{}", path, document.line));
      }
      d.text_tokens += *tokens;
    }
    d.images = static_cast<uint32_t>(document.images.size());
    docs.push_back(d);
  }
  return docs;
}

Status AddMmc4(cost::SampleTableBuilder* builder, uint32_t source, const std::vector<Mmc4Doc>& docs,
               const CocoFile& files, uint64_t seed, const CorpusTokenizer& tokenizer) {
  std::vector<cost::ImageSize> images;
  for (size_t d = 0; d < docs.size(); ++d) {
    images.clear();
    for (uint32_t i = 0; i < docs[d].images; ++i) {
      images.push_back(files.sizes[corpora::Mmc4CocoImage(seed, d, i, files.sizes.size())]);
    }
    uint32_t text = docs[d].text_tokens + tokenizer.image_marker_tokens() * docs[d].images +
                    CorpusTokenizer::kDocumentEndTokens;
    MMPT_RETURN_IF_ERROR(builder->Add(source, text, images));
  }
  return Status::OK();
}

Status AddCoco(cost::SampleTableBuilder* builder, uint32_t source, const CocoFile& files,
               const CorpusTokenizer& tokenizer) {
  for (size_t k = 0; k < files.coco.captions.size(); ++k) {
    const corpora::CocoCaption& caption = files.coco.captions[k];
    auto tokens = tokenizer.CaptionPairTokens(caption.text);
    if (!tokens.ok()) {
      return tokens.status().WithContext(fmt::format("{}: annotations[{}]", files.coco_path, k));
    }
    cost::ImageSize image[1] = {files.sizes[caption.image]};
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

Result<CorpusTokenizer> CorpusTokenizer::Load(const std::string& tokenizer_path,
                                              std::string_view chat) {
  CorpusTokenizer out;
  auto tokenizer = text::LoadTokenizer(tokenizer_path);
  if (!tokenizer.ok()) {
    return tokenizer.status().WithContext(
        fmt::format("built-in corpora count tokens with {} (installed by "
                    "scripts/install-deps.sh)",
                    tokenizer_path));
  }
  out.tokenizer_ = std::move(*tokenizer);
  MMPT_ASSIGN_OR_RETURN(text::ChatTemplate templ, text::ChatTemplate::Load(std::string(chat)));
  for (const std::string* marker : {&templ.image.start, &templ.image.end}) {
    if (!out.tokenizer_->TokenToId(*marker)) {
      return Status::InvalidArgument("chat template {}: the tokenizer has no token '{}'",
                                     templ.name, *marker);
    }
    ++out.image_marker_tokens_;
  }
  MMPT_ASSIGN_OR_RETURN(text::ChatRenderer renderer,
                        text::ChatRenderer::Create(std::move(templ), *out.tokenizer_));
  out.renderer_ = std::make_unique<text::ChatRenderer>(std::move(renderer));
  return out;
}

Result<const CorpusTokenizer*> CorpusTokenizer::Default() {
  static const Result<CorpusTokenizer>* loaded =
      new Result<CorpusTokenizer>([]() -> Result<CorpusTokenizer> {
        MMPT_ASSIGN_OR_RETURN(std::string path, text::FindTokenizer());
        return Load(path);
      }());
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

Result<uint32_t> CorpusTokenizer::TextTokens(std::string_view text) const {
  MMPT_ASSIGN_OR_RETURN(size_t count, tokenizer_->Count(text));
  return static_cast<uint32_t>(count);
}

Result<uint32_t> CorpusTokenizer::CaptionPairTokens(std::string_view caption,
                                                    uint32_t images) const {
  std::vector<text::ChatPiece> pieces(images,
                                      text::ChatPiece{"user", 0, text::PieceKind::kImage, {}});
  pieces.push_back({"assistant", 1, text::PieceKind::kText, caption});
  text::RenderedText rendered;
  MMPT_RETURN_IF_ERROR(renderer_->Render(pieces, &rendered));
  return static_cast<uint32_t>(rendered.ids.size());
}

cost::ImageSize OpenImagesPhoto(uint64_t seed, uint64_t k, uint32_t j) {
  const uint64_t h = Mix64(Mix64(seed * 0x9e3779b97f4a7c15ull + k) + j + 1);
  const uint64_t u = h % 1000;
  const uint32_t short_side = u < 400   ? 768
                              : u < 600 ? 683
                                        : 576 + static_cast<uint32_t>((h >> 20) % 449);
  const bool portrait = (h >> 40) % 4 == 0;
  return portrait ? cost::ImageSize{short_side, 1024} : cost::ImageSize{1024, short_side};
}

Result<cost::SampleTable> PhotoPostsCorpus(const std::string& data_dir, uint64_t seed,
                                           const CorpusTokenizer* tokenizer) {
  const std::string path = data_dir + "/" + corpora::kCocoCaptionsFile;
  MMPT_ASSIGN_OR_RETURN(corpora::CocoCaptions coco, corpora::ReadCocoCaptions(path));
  MMPT_ASSIGN_OR_RETURN(const CorpusTokenizer* tok, Resolve(tokenizer));
  cost::SampleTableBuilder builder;
  const uint32_t source = builder.AddSource("photos");
  std::vector<cost::ImageSize> photos;
  for (size_t k = 0; k < coco.captions.size(); ++k) {
    const uint32_t count = 2 + static_cast<uint32_t>(Mix64(seed * 0x9e3779b97f4a7c15ull + k) % 5);
    photos.clear();
    for (uint32_t j = 0; j < count; ++j) photos.push_back(OpenImagesPhoto(seed, k, j));
    auto tokens = tok->CaptionPairTokens(coco.captions[k].text, count);
    if (!tokens.ok())
      return tokens.status().WithContext(fmt::format("{}: annotations[{}]", path, k));
    MMPT_RETURN_IF_ERROR(builder.Add(source, *tokens, photos));
  }
  return std::move(builder).Finish();
}

Result<BuiltinCorpus> LoadBuiltinCorpus(std::string_view name) {
  BuiltinCorpus out;
  if (name == "coco") {
    MMPT_ASSIGN_OR_RETURN(out.table, CocoCaptionsCorpus());
  } else if (name == "mmc4") {
    MMPT_ASSIGN_OR_RETURN(out.table, Mmc4DocumentsCorpus());
  } else if (name == "mix") {
    MMPT_ASSIGN_OR_RETURN(out.table, PretrainingMixCorpus());
    out.weights.assign(std::begin(kPretrainingMixWeights), std::end(kPretrainingMixWeights));
  } else if (name == "photos") {
    MMPT_ASSIGN_OR_RETURN(out.table, PhotoPostsCorpus());
  } else {
    return Status::InvalidArgument("unknown built-in corpus '{}' (expected {})", name,
                                   kBuiltinCorpusNames);
  }
  return out;
}

Result<cost::SampleTable> CocoCaptionsCorpus(const std::string& data_dir,
                                             const CorpusTokenizer* tokenizer) {
  MMPT_ASSIGN_OR_RETURN(CocoFile files, ReadCoco(data_dir));
  MMPT_ASSIGN_OR_RETURN(const CorpusTokenizer* tok, Resolve(tokenizer));
  cost::SampleTableBuilder builder;
  MMPT_RETURN_IF_ERROR(AddCoco(&builder, builder.AddSource("coco"), files, *tok));
  return std::move(builder).Finish();
}

Result<cost::SampleTable> Mmc4DocumentsCorpus(const std::string& data_dir, uint64_t seed,
                                              const CorpusTokenizer* tokenizer) {
  MMPT_ASSIGN_OR_RETURN(CocoFile files, ReadCoco(data_dir));
  MMPT_ASSIGN_OR_RETURN(const CorpusTokenizer* tok, Resolve(tokenizer));
  MMPT_ASSIGN_OR_RETURN(std::vector<Mmc4Doc> docs, ReadMmc4(data_dir, *tok));
  cost::SampleTableBuilder builder;
  MMPT_RETURN_IF_ERROR(AddMmc4(&builder, builder.AddSource("mmc4"), docs, files, seed, *tok));
  return std::move(builder).Finish();
}

Result<cost::SampleTable> PretrainingMixCorpus(const std::string& data_dir, uint64_t seed,
                                               const CorpusTokenizer* tokenizer) {
  MMPT_ASSIGN_OR_RETURN(CocoFile files, ReadCoco(data_dir));
  MMPT_ASSIGN_OR_RETURN(const CorpusTokenizer* tok, Resolve(tokenizer));
  MMPT_ASSIGN_OR_RETURN(std::vector<Mmc4Doc> docs, ReadMmc4(data_dir, *tok));
  cost::SampleTableBuilder builder;
  MMPT_RETURN_IF_ERROR(AddCoco(&builder, builder.AddSource("coco"), files, *tok));
  MMPT_RETURN_IF_ERROR(AddMmc4(&builder, builder.AddSource("mmc4"), docs, files, seed, *tok));
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

}  // namespace mmpt::corpora
