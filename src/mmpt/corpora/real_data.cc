#include "mmpt/corpora/real_data.h"

#include <simdjson.h>

#include <limits>
#include <unordered_map>

#include "mmpt/core/data_dir.h"
#include "mmpt/core/hash.h"
#include "mmpt/core/mapped_file.h"

namespace mmpt::corpora {

namespace {

Result<MappedFile> OpenRealFile(const std::string& path) {
  auto file = MappedFile::Open(path);
  if (!file.ok()) {
    return file.status().WithContext(
        "reading real data (real/ of mmpt's data directory: a build tree links "
        "../shared/data/real, or set $MMPT_HOME)");
  }
  return file;
}

// A positive size that fits 32 bits, or false.
bool GetSide(simdjson::dom::element record, const char* key, uint32_t* side) {
  uint64_t value;
  if (record[key].get_uint64().get(value) != simdjson::SUCCESS || value == 0 ||
      value > std::numeric_limits<uint32_t>::max()) {
    return false;
  }
  *side = static_cast<uint32_t>(value);
  return true;
}

}  // namespace

std::string RealDataDir() {
  auto dir = DataDir();
  return (dir.ok() ? *dir : std::string("$MMPT_HOME")) + "/real";
}

std::string RealDataPath(std::string_view file_name) {
  return RealDataDir() + "/" + std::string(file_name);
}

std::vector<std::string> CocoCaptions::CaptionTexts() const {
  std::vector<std::string> texts;
  texts.reserve(captions.size());
  for (const CocoCaption& caption : captions) texts.push_back(caption.text);
  return texts;
}

std::vector<size_t> CocoCaptions::FirstCaptionOfEachImage() const {
  std::vector<size_t> first(images.size(), kNoCaption);
  for (size_t k = captions.size(); k-- > 0;) first[captions[k].image] = k;
  return first;
}

Result<CocoCaptions> ReadCocoCaptions(const std::string& path) {
  MMPT_ASSIGN_OR_RETURN(MappedFile file, OpenRealFile(path));
  if (file.text().empty()) return Status::Corrupt("{}: empty file", path);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(file.text().data(), file.text().size()).get(root)) {
    return Status::Corrupt("{}: malformed JSON: {}", path, simdjson::error_message(error));
  }
  simdjson::dom::array images, annotations;
  if (root["images"].get_array().get(images) != simdjson::SUCCESS ||
      root["annotations"].get_array().get(annotations) != simdjson::SUCCESS) {
    return Status::Corrupt("{}: not COCO captions (needs \"images\" and \"annotations\" arrays)",
                           path);
  }
  CocoCaptions coco;
  coco.images.reserve(images.size());
  std::unordered_map<uint64_t, uint32_t> index_of_id;
  for (simdjson::dom::element record : images) {
    const size_t i = coco.images.size();
    CocoImage image;
    if (record["id"].get_uint64().get(image.id) != simdjson::SUCCESS ||
        !GetSide(record, "width", &image.width) || !GetSide(record, "height", &image.height)) {
      return Status::Corrupt("{}: images[{}]: needs an integer id and positive width and height",
                             path, i);
    }
    if (simdjson::dom::element name; record["file_name"].get(name) == simdjson::SUCCESS) {
      std::string_view file_name;
      if (name.get_string().get(file_name) != simdjson::SUCCESS) {
        return Status::Corrupt("{}: images[{}]: file_name is not a string", path, i);
      }
      image.file_name = file_name;
    }
    if (!index_of_id.emplace(image.id, static_cast<uint32_t>(i)).second) {
      return Status::Corrupt("{}: images[{}]: id {} repeats images[{}]", path, i, image.id,
                             index_of_id[image.id]);
    }
    coco.images.push_back(std::move(image));
  }
  if (coco.images.empty()) return Status::Corrupt("{}: no images", path);
  coco.captions.reserve(annotations.size());
  for (simdjson::dom::element record : annotations) {
    const size_t k = coco.captions.size();
    uint64_t id;
    std::string_view text;
    if (record["image_id"].get_uint64().get(id) != simdjson::SUCCESS ||
        record["caption"].get_string().get(text) != simdjson::SUCCESS) {
      return Status::Corrupt("{}: annotations[{}]: needs an integer image_id and a string caption",
                             path, k);
    }
    auto it = index_of_id.find(id);
    if (it == index_of_id.end()) {
      return Status::Corrupt("{}: annotations[{}]: image_id {} is no image's id", path, k, id);
    }
    coco.captions.push_back({it->second, std::string(text)});
  }
  return coco;
}

std::string Mmc4Document::JoinedText(std::string_view separator) const {
  std::string joined;
  for (size_t i = 0; i < sentences.size(); ++i) {
    if (i > 0) joined += separator;
    joined += sentences[i];
  }
  return joined;
}

Result<std::vector<Mmc4Document>> ReadMmc4Documents(const std::string& path) {
  MMPT_ASSIGN_OR_RETURN(MappedFile file, OpenRealFile(path));
  const std::string_view contents = file.text();
  std::vector<Mmc4Document> documents;
  simdjson::dom::parser parser;
  size_t pos = 0;
  for (uint64_t line_number = 1; pos < contents.size(); ++line_number) {
    size_t end = contents.find('\n', pos);
    if (end == std::string_view::npos) end = contents.size();
    const std::string_view line = contents.substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    simdjson::dom::element record;
    if (auto error = parser.parse(line.data(), line.size()).get(record)) {
      return Status::Corrupt("{}:{}: malformed JSON: {}", path, line_number,
                             simdjson::error_message(error));
    }
    Mmc4Document doc;
    doc.line = line_number;
    simdjson::dom::array text_list, image_info;
    if (record["text_list"].get_array().get(text_list) != simdjson::SUCCESS) {
      return Status::Corrupt("{}:{}: no \"text_list\" array", path, line_number);
    }
    for (simdjson::dom::element item : text_list) {
      std::string_view sentence;
      if (item.get_string().get(sentence) != simdjson::SUCCESS) {
        return Status::Corrupt("{}:{}: text_list[{}] is not a string", path, line_number,
                               doc.sentences.size());
      }
      doc.sentences.emplace_back(sentence);
    }
    if (record["image_info"].get_array().get(image_info) != simdjson::SUCCESS) {
      return Status::Corrupt("{}:{}: no \"image_info\" array", path, line_number);
    }
    for (simdjson::dom::element info : image_info) {
      uint64_t index;
      if (info["matched_text_index"].get_uint64().get(index) != simdjson::SUCCESS ||
          index >= doc.sentences.size()) {
        return Status::Corrupt(
            "{}:{}: image_info[{}]: matched_text_index is not an index of "
            "text_list ({} sentences)",
            path, line_number, doc.images.size(), doc.sentences.size());
      }
      doc.images.push_back({static_cast<uint32_t>(index)});
    }
    documents.push_back(std::move(doc));
  }
  return documents;
}

uint64_t Mmc4CocoImage(uint64_t seed, uint64_t doc, uint64_t image, uint64_t num_coco_images) {
  return Mix64(seed ^ Mix64(doc * 1000003 + image)) % num_coco_images;
}

}  // namespace mmpt::corpora
