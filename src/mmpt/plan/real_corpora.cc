#include "mmpt/plan/real_corpora.h"

#include <cmath>
#include <unordered_map>
#include <vector>

#include <simdjson.h>

#include "mmpt/cost/text_estimate.h"
#include "mmpt/plan/permutation.h"

namespace mmpt::plan {
namespace {

struct Mmc4Doc {
  uint32_t text_tokens = 0;  // Σ sentence tokens
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

Result<std::vector<Mmc4Doc>> ReadMmc4(const std::string& data_dir) {
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
      d.text_tokens += cost::EstimateTextTokens(s) + 1;  // + the space or newline between
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

// A seeded image size for mmc4 (which has none): long side log-uniform in [300, 1500],
// one of seven common aspect ratios.
cost::ImageSize DrawImageSize(uint64_t seed, uint64_t doc, uint64_t image) {
  static constexpr double kRatios[7] = {1.0, 4.0 / 3, 3.0 / 4, 3.0 / 2, 2.0 / 3, 16.0 / 9, 9.0 / 16};
  uint64_t h = Mix64(seed ^ Mix64(doc * 1000003 + image));
  double u = static_cast<double>(h >> 11) * 0x1.0p-53;
  double long_side = 300.0 * std::exp(u * std::log(1500.0 / 300.0));
  double ratio = kRatios[Mix64(h) % 7];  // width / height
  double w = ratio >= 1 ? long_side : long_side * ratio;
  double hgt = ratio >= 1 ? long_side / ratio : long_side;
  return {static_cast<uint32_t>(std::lround(w)), static_cast<uint32_t>(std::lround(hgt))};
}

Status AddMmc4(cost::SampleTableBuilder* builder, uint32_t source,
               const std::vector<Mmc4Doc>& docs, uint64_t seed) {
  std::vector<cost::ImageSize> images;
  for (size_t d = 0; d < docs.size(); ++d) {
    images.clear();
    for (uint32_t i = 0; i < docs[d].images; ++i) images.push_back(DrawImageSize(seed, d, i));
    uint32_t text = docs[d].text_tokens + kDocumentTemplateTokens +
                    kImageTemplateTokens * docs[d].images;
    MMPT_RETURN_IF_ERROR(builder->Add(source, text, images));
  }
  return Status::OK();
}

Status AddCoco(cost::SampleTableBuilder* builder, uint32_t source, const std::string& data_dir) {
  std::string path = data_dir + "/coco_val2017_captions.json";
  MMPT_ASSIGN_OR_RETURN(simdjson::padded_string text, Load(path));
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(text).get(root) != simdjson::SUCCESS) {
    return Status::Corrupt("{}: not JSON", path);
  }
  std::unordered_map<uint64_t, cost::ImageSize> sizes;
  simdjson::dom::array images, annotations;
  if (root["images"].get_array().get(images) != simdjson::SUCCESS ||
      root["annotations"].get_array().get(annotations) != simdjson::SUCCESS) {
    return Status::Corrupt("{}: needs 'images' and 'annotations' arrays", path);
  }
  for (simdjson::dom::element image : images) {
    uint64_t id, w, h;
    if (image["id"].get_uint64().get(id) != simdjson::SUCCESS ||
        image["width"].get_uint64().get(w) != simdjson::SUCCESS ||
        image["height"].get_uint64().get(h) != simdjson::SUCCESS) {
      return Status::Corrupt("{}: an image lacks id/width/height", path);
    }
    sizes[id] = {static_cast<uint32_t>(w), static_cast<uint32_t>(h)};
  }
  size_t k = 0;
  for (simdjson::dom::element annotation : annotations) {
    ++k;
    uint64_t id;
    std::string_view caption;
    if (annotation["image_id"].get_uint64().get(id) != simdjson::SUCCESS ||
        annotation["caption"].get_string().get(caption) != simdjson::SUCCESS) {
      return Status::Corrupt("{}: annotation {} lacks image_id/caption", path, k);
    }
    auto it = sizes.find(id);
    if (it == sizes.end()) {
      return Status::Corrupt("{}: annotation {} names unknown image {}", path, k, id);
    }
    cost::ImageSize image[1] = {it->second};
    MMPT_RETURN_IF_ERROR(builder->Add(source, cost::EstimateTextTokens(caption) +
                                                  kCaptionTemplateTokens,
                                      image));
  }
  return Status::OK();
}

}  // namespace

std::string RealDataDir() { return MMPT_SOURCE_DIR "/../shared/data/real"; }

Result<cost::SampleTable> CocoCaptions(const std::string& data_dir) {
  cost::SampleTableBuilder builder;
  MMPT_RETURN_IF_ERROR(AddCoco(&builder, builder.AddSource("coco"), data_dir));
  return std::move(builder).Finish();
}

Result<cost::SampleTable> Mmc4Documents(const std::string& data_dir, uint64_t seed) {
  MMPT_ASSIGN_OR_RETURN(std::vector<Mmc4Doc> docs, ReadMmc4(data_dir));
  cost::SampleTableBuilder builder;
  MMPT_RETURN_IF_ERROR(AddMmc4(&builder, builder.AddSource("mmc4"), docs, seed));
  return std::move(builder).Finish();
}

Result<cost::SampleTable> PretrainingMix(const std::string& data_dir, uint64_t seed) {
  MMPT_ASSIGN_OR_RETURN(std::vector<Mmc4Doc> docs, ReadMmc4(data_dir));
  cost::SampleTableBuilder builder;
  MMPT_RETURN_IF_ERROR(AddCoco(&builder, builder.AddSource("coco"), data_dir));
  MMPT_RETURN_IF_ERROR(AddMmc4(&builder, builder.AddSource("mmc4"), docs, seed));
  uint32_t text = builder.AddSource("text");
  for (const Mmc4Doc& d : docs) {
    MMPT_RETURN_IF_ERROR(builder.Add(text, d.text_tokens + kDocumentTemplateTokens, {}));
  }
  uint32_t text_long = builder.AddSource("text-long");
  for (uint64_t k = 0; k < 512; ++k) {
    uint64_t h = Mix64(seed * 7919 + k);
    uint32_t parts = 4 + static_cast<uint32_t>(h % 37);
    uint64_t tokens = kDocumentTemplateTokens;
    for (uint32_t p = 0; p < parts; ++p) tokens += docs[Mix64(h + p) % docs.size()].text_tokens;
    MMPT_RETURN_IF_ERROR(builder.Add(text_long, static_cast<uint32_t>(tokens), {}));
  }
  return std::move(builder).Finish();
}

}  // namespace mmpt::plan
