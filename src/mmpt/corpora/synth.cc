#include "mmpt/corpora/synth.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>  // writes the JSON lines; text::Read* parse the real files
#include <random>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/thread_pool.h"
#include "mmpt/corpora/image_synth.h"
#include "mmpt/store/shard_writer.h"
#include "mmpt/store/webdataset.h"
#include "mmpt/corpora/real_data.h"

namespace mmpt::corpora {

// Moved here from the store module; its names are used unqualified.
using namespace mmpt::store;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// One piece of a synthetic document before it is written in some input format.
struct Item {
  std::string role;  // "user", "assistant", or "" in plain documents
  bool is_image = false;
  std::string text;
  uint32_t width = 0, height = 0;
  std::string path;  // set once the image file is named
};

struct Doc {
  std::string key;
  std::vector<Item> items;
};

Item Text(std::string role, std::string text) {
  Item item;
  item.role = std::move(role);
  item.text = std::move(text);
  return item;
}

Item ImageOf(std::string role, uint32_t width, uint32_t height) {
  Item item;
  item.role = std::move(role);
  item.is_image = true;
  item.width = width;
  item.height = height;
  return item;
}

// One caption pair per COCO image (its first caption), images in file order.
std::vector<Doc> CocoDocs(const corpora::CocoCaptions& coco, uint64_t limit) {
  const std::vector<size_t> first_caption = coco.FirstCaptionOfEachImage();
  std::vector<Doc> docs;
  for (size_t i = 0; i < coco.images.size() && (limit == 0 || docs.size() < limit); ++i) {
    if (first_caption[i] == corpora::CocoCaptions::kNoCaption) continue;
    const corpora::CocoImage& image = coco.images[i];
    Doc d;
    d.key = fmt::format("coco-{}", image.id);
    d.items.push_back(ImageOf("user", image.width, image.height));
    d.items.push_back(Text("user", "Describe the image briefly."));
    d.items.push_back(Text("assistant", coco.captions[first_caption[i]].text));
    docs.push_back(std::move(d));
  }
  return docs;
}

// The mmc4 documents, each image before its matched sentence and at the size of the COCO image
// corpora::Mmc4CocoImage picks (mmc4 records no sizes).
std::vector<Doc> Mmc4Docs(const std::vector<corpora::Mmc4Document>& documents,
                          const corpora::CocoCaptions& coco, uint64_t limit, uint64_t seed) {
  std::vector<Doc> docs;
  for (size_t d = 0; d < documents.size() && (limit == 0 || docs.size() < limit); ++d) {
    const corpora::Mmc4Document& document = documents[d];
    std::vector<std::vector<Item>> before(document.sentences.size());
    for (size_t j = 0; j < document.images.size(); ++j) {
      const corpora::CocoImage& sized =
          coco.images[corpora::Mmc4CocoImage(seed, d, j, coco.images.size())];
      before[document.images[j].matched_text_index].push_back(
          ImageOf("", sized.width, sized.height));
    }
    Doc doc;
    doc.key = fmt::format("mmc4-{}", document.line);
    for (size_t i = 0; i < document.sentences.size(); ++i) {
      for (Item& image : before[i]) doc.items.push_back(std::move(image));
      doc.items.push_back(Text("", document.sentences[i]));
    }
    docs.push_back(std::move(doc));
  }
  return docs;
}

std::vector<Doc> TinyDocs(uint64_t count, uint32_t min_side, uint32_t max_side, uint64_t seed) {
  static constexpr const char* kWords[] = {
      "a",     "the",   "small", "red",  "dog",    "runs",  "across", "green", "field",
      "near",  "two",   "people", "sit", "on",     "bench", "with",   "blue",  "sky",
      "above", "city",  "street", "at",  "night",  "cat",   "sleeps", "under", "table"};
  std::mt19937_64 rng(seed);
  std::vector<Doc> docs;
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t w = std::uniform_int_distribution<uint32_t>(min_side, max_side)(rng);
    uint32_t h = std::uniform_int_distribution<uint32_t>(min_side, max_side)(rng);
    size_t words = std::uniform_int_distribution<size_t>(5, 40)(rng);
    std::string caption;
    for (size_t k = 0; k < words; ++k) {
      if (k > 0) caption += ' ';
      caption += kWords[std::uniform_int_distribution<size_t>(0, std::size(kWords) - 1)(rng)];
    }
    Doc d;
    d.key = fmt::format("tiny-{}", i);
    d.items.push_back(ImageOf("user", w, h));
    d.items.push_back(Text("user", "What is in the picture?"));
    d.items.push_back(Text("assistant", caption + "."));
    docs.push_back(std::move(d));
  }
  return docs;
}

json ImageValue(const Item& item, bool metadata_only) {
  if (metadata_only) return {{"width", item.width}, {"height", item.height}};
  return item.path;
}

// Render one document as a JSON line of `format`.
std::string RenderDoc(const Doc& doc, InputFormat format, bool metadata_only) {
  json out;
  out["id"] = doc.key;
  switch (format) {
    case InputFormat::kCanonical: {
      json segments = json::array(), media = json::array();
      for (const Item& item : doc.items) {
        json segment;
        if (!item.role.empty()) segment["role"] = item.role;
        if (item.is_image) {
          segment["media"] = media.size();
          media.push_back(metadata_only ? ImageValue(item, true) : json{{"path", item.path}});
        } else {
          segment["text"] = item.text;
        }
        segments.push_back(segment);
      }
      out["segments"] = segments;
      out["media"] = media;
      break;
    }
    case InputFormat::kLlava:
    case InputFormat::kChat: {
      json turns = json::array(), images = json::array();
      for (const Item& item : doc.items) {
        std::string role = item.role.empty() ? "user" : item.role;
        bool llava = format == InputFormat::kLlava;
        std::string role_name = llava ? (role == "user" ? "human" : "gpt") : role;
        const char* role_key = llava ? "from" : "role";
        if (turns.empty() || turns.back()[role_key] != role_name) {
          turns.push_back(llava ? json{{"from", role_name}, {"value", ""}}
                                : json{{"role", role_name}, {"content", json::array()}});
        }
        json& turn = turns.back();
        if (llava) {
          std::string value = turn["value"].get<std::string>();
          if (!value.empty()) value += item.is_image ? "" : "\n";
          value += item.is_image ? "<image>" : item.text;
          turn["value"] = value;
          if (item.is_image) images.push_back(ImageValue(item, metadata_only));
        } else if (item.is_image) {
          turn["content"].push_back({{"type", "image"}, {"image", ImageValue(item, metadata_only)}});
        } else {
          turn["content"].push_back({{"type", "text"}, {"text", item.text}});
        }
      }
      if (format == InputFormat::kLlava) {
        out["images"] = images;
        out["conversations"] = turns;
      } else {
        out["messages"] = turns;
      }
      break;
    }
    case InputFormat::kMmc4: {
      json texts = json::array(), info = json::array();
      for (const Item& item : doc.items) {
        if (!item.is_image) {
          texts.push_back(item.text);
          continue;
        }
        json entry = metadata_only ? ImageValue(item, true) : json{{"image_name", item.path}};
        entry["matched_text_index"] = texts.size();  // the text that follows it
        info.push_back(entry);
      }
      if (!info.empty() && info.back()["matched_text_index"] == texts.size()) texts.push_back("");
      out["text_list"] = texts;
      out["image_info"] = info;
      break;
    }
    case InputFormat::kObelics: {
      json texts = json::array(), images = json::array();
      for (const Item& item : doc.items) {
        texts.push_back(item.is_image ? json(nullptr) : json(item.text));
        images.push_back(item.is_image ? ImageValue(item, metadata_only) : json(nullptr));
      }
      out["texts"] = texts;
      out["images"] = images;
      break;
    }
    case InputFormat::kWebDataset:  // written by WebDatasetMembers
    case InputFormat::kAuto: break;
  }
  return out.dump() + "\n";
}

// A caption pair (coco's or tiny's: the image first, the caption last) as WebDataset members,
// LAION's way: <key>.<image ext>, <key>.txt (the caption) and <key>.json ({"key", "caption",
// "width", "height"}); the user's prompt has no place in a WebDataset sample.
void AppendWebDatasetMembers(const Doc& doc, std::string image_bytes,
                             std::vector<WdsMember>& members) {
  const Item* image = &doc.items.front();
  const Item* caption = &doc.items.back();
  const std::string ext = image->path.substr(image->path.rfind('.'));
  members.push_back({doc.key + ext, std::move(image_bytes), {}});
  members.push_back({doc.key + ".txt", caption->text, {}});
  json meta = {{"key", doc.key}, {"caption", caption->text}, {"width", image->width},
               {"height", image->height}};
  members.push_back({doc.key + ".json", meta.dump(), {}});
}

Result<media::ImageFormat> PickFormat(const std::string& name, uint64_t counter) {
  if (name == "jpeg" || name == "jpg") return media::ImageFormat::kJpeg;
  if (name == "png") return media::ImageFormat::kPng;
  if (name == "webp") return media::ImageFormat::kWebp;
  if (name == "mix") {
    static constexpr media::ImageFormat kCycle[] = {
        media::ImageFormat::kJpeg, media::ImageFormat::kPng, media::ImageFormat::kWebp};
    return kCycle[counter % 3];
  }
  return Status::InvalidArgument("--image-format must be jpeg, png, webp or mix, not '{}'", name);
}

}  // namespace

Result<SynthReport> Synthesize(const SynthOptions& options) {
  if (options.format == InputFormat::kAuto) {
    return Status::InvalidArgument("synth needs a concrete --format, not auto");
  }
  if (options.out_dir.empty()) return Status::InvalidArgument("synth: no --out directory");
  const bool wds = options.format == InputFormat::kWebDataset;
  if (wds && (options.metadata_only || options.profile == "mmc4")) {
    return Status::InvalidArgument(
        "--format wds writes caption pairs with their images: profile coco or tiny, without "
        "--metadata-only");
  }
  MMPT_RETURN_IF_ERROR(PickFormat(options.image_format, 0).status());
  SynthReport report;
  std::vector<Doc> docs;
  // The given file, or the real one.
  auto or_real = [](const std::string& path, const char* real_file) {
    return path.empty() ? corpora::RealDataPath(real_file) : path;
  };
  if (options.profile == "coco") {
    const std::string path = or_real(options.source_path, corpora::kCocoCaptionsFile);
    MMPT_ASSIGN_OR_RETURN(corpora::CocoCaptions coco, corpora::ReadCocoCaptions(path));
    docs = CocoDocs(coco, options.samples);
  } else if (options.profile == "mmc4") {
    const std::string path = or_real(options.source_path, corpora::kMmc4DocsFile);
    MMPT_ASSIGN_OR_RETURN(std::vector<corpora::Mmc4Document> documents,
                          corpora::ReadMmc4Documents(path));
    const std::string sizes_path = or_real(options.coco_path, corpora::kCocoCaptionsFile);
    MMPT_ASSIGN_OR_RETURN(corpora::CocoCaptions coco, corpora::ReadCocoCaptions(sizes_path));
    docs = Mmc4Docs(documents, coco, options.samples, options.seed);
    report.sizes_drawn = true;
  } else if (options.profile == "tiny") {
    if (options.min_side == 0 || options.min_side > options.max_side) {
      return Status::InvalidArgument("tiny profile: need 0 < --min-side <= --max-side");
    }
    docs = TinyDocs(options.samples == 0 ? 100 : options.samples, options.min_side,
                    options.max_side, options.seed);
    report.sizes_drawn = true;
  } else {
    return Status::InvalidArgument("unknown synth profile '{}' (expected coco, mmc4 or tiny)",
                                   options.profile);
  }

  const std::string name = options.name.empty() ? options.profile : options.name;
  std::error_code error;
  fs::create_directories(fs::path(options.out_dir) / (wds ? "" : "images"), error);
  if (error) return Status::IOError("{}: cannot create: {}", options.out_dir, error.message());

  // Name every image first (a running counter picks the format for "mix"), then encode in
  // parallel; each image's pixels depend only on its size and seed. A WebDataset keeps the
  // encoded bytes for its tar instead of writing files.
  struct Job {
    Item* item;
    media::ImageFormat format;
    uint64_t seed;
  };
  std::vector<Job> jobs;
  for (size_t d = 0; d < docs.size(); ++d) {
    size_t k = 0;
    for (Item& item : docs[d].items) {
      if (!item.is_image) continue;
      media::ImageFormat format = *PickFormat(options.image_format, jobs.size());
      item.path = fmt::format("images/{}-{:06}-{}.{}", name, d, k++,
                              MediaExtension(static_cast<uint8_t>(format)));
      jobs.push_back({&item, format, options.seed * 1000003 + jobs.size()});
    }
  }
  report.images = jobs.size();
  std::vector<std::string> encoded;  // per image, for a WebDataset
  if (!options.metadata_only) {
    std::vector<Status> statuses(jobs.size());
    std::vector<uint64_t> sizes(jobs.size(), 0);
    if (wds) encoded.resize(jobs.size());
    ThreadPool pool(options.jobs);
    pool.ParallelFor(0, jobs.size(), [&](size_t j) {
      corpora::EncodeOptions encode;
      encode.format = jobs[j].format;
      encode.quality = 75;
      auto bytes = corpora::SynthesizeImageFile(jobs[j].item->width, jobs[j].item->height, 3,
                                              jobs[j].seed, encode);
      if (!bytes.ok()) {
        statuses[j] = bytes.status().WithContext(jobs[j].item->path);
        return;
      }
      sizes[j] = bytes->size();
      if (wds) {
        encoded[j] = std::move(*bytes);
        return;
      }
      std::string path = (fs::path(options.out_dir) / jobs[j].item->path).string();
      std::ofstream file(path, std::ios::binary | std::ios::trunc);
      file.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
      if (!file) statuses[j] = Status::IOError("{}: cannot write", path);
    });
    for (size_t j = 0; j < jobs.size(); ++j) {
      MMPT_RETURN_IF_ERROR(statuses[j]);
      report.image_bytes += sizes[j];
    }
  }
  std::string out;
  if (wds) {
    std::vector<WdsMember> members;
    for (size_t d = 0; d < docs.size(); ++d) {  // one image a document, in order
      AppendWebDatasetMembers(docs[d], std::move(encoded[d]), members);
    }
    MMPT_ASSIGN_OR_RETURN(out, WriteWebDatasetTar(members, /*gzip=*/false));
  } else {
    for (const Doc& doc : docs) out += RenderDoc(doc, options.format, options.metadata_only);
  }
  report.path = (fs::path(options.out_dir) / (name + (wds ? ".tar" : ".jsonl"))).string();
  MMPT_RETURN_IF_ERROR(WriteFileAtomic(report.path, out));
  report.samples = docs.size();
  return report;
}

}  // namespace mmpt::corpora
