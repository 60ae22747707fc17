#include "mmpt/corpora/synth.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>  // writes the JSON lines; text::Read* parse the real files
#include <random>

#include "mmpt/core/hash.h"
#include "mmpt/core/mapped_file.h"
#include "mmpt/core/thread_pool.h"
#include "mmpt/corpora/av_synth.h"
#include "mmpt/corpora/image_synth.h"
#include "mmpt/corpora/omni_tokenizer.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/ingest/webdataset.h"
#include "mmpt/store/shard_writer.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::corpora {

// Moved here from the store module; its names are used unqualified.
using namespace mmpt::store;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

enum class Kind : uint8_t { kText, kImage, kVideo, kAudio };

// One piece of a synthetic document before it is written in some input format.
struct Item {
  std::string role;  // "user", "assistant", or "" in plain documents
  Kind kind = Kind::kText;
  std::string text;                // a text's words, or what a speech clip says
  uint32_t width = 0, height = 0;  // an image's or video's pixels
  uint32_t fps = 0, frames = 0;    // a video's
  SpeechInfo speech;               // a speech clip's, once spoken
  std::string path;                // set once the media file is named

  bool is_media() const { return kind != Kind::kText; }
  double video_seconds() const { return VideoSpec{width, height, fps, frames}.duration_seconds(); }
};

struct Doc {
  std::string key;
  std::vector<Item> items;
  ingest::InputFormat format = ingest::InputFormat::kAuto;  // kAuto: the corpus's --format
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
  item.kind = Kind::kImage;
  item.width = width;
  item.height = height;
  return item;
}

// Video number `index` (0-based, corpus order) at the size of `image` rounded down to even (as
// 4:2:0 chroma needs), its fps and length drawn from the seed with Mix64 (the same on every
// machine): fps one of 10, 24, 25, 30, length a whole number of frames in [min_duration,
// max_duration] seconds (at least one frame).
Item VideoOf(std::string role, const corpora::CocoImage& image, uint64_t index,
             const SynthOptions& options) {
  static constexpr uint32_t kFps[] = {10, 24, 25, 30};
  const uint64_t draw = Mix64(options.seed ^ Mix64(index * 1000003 + 7));
  Item item;
  item.role = std::move(role);
  item.kind = Kind::kVideo;
  item.width = std::max<uint32_t>(2, image.width & ~1u);
  item.height = std::max<uint32_t>(2, image.height & ~1u);
  item.fps = kFps[draw % std::size(kFps)];
  const auto min_frames =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(options.min_duration * item.fps)));
  const auto max_frames = std::max<uint64_t>(
      min_frames, static_cast<uint64_t>(std::floor(options.max_duration * item.fps)));
  item.frames = static_cast<uint32_t>(min_frames + Mix64(draw) % (max_frames - min_frames + 1));
  return item;
}

Item SpeechOf(std::string role, std::string text) {
  Item item = Text(std::move(role), std::move(text));
  item.kind = Kind::kAudio;
  return item;
}

// A COCO image with its first caption (file order): what every COCO-based profile draws from.
struct CaptionedImage {
  const corpora::CocoImage* image;
  const std::string* caption;
};

std::vector<CaptionedImage> CaptionedImages(const corpora::CocoCaptions& coco) {
  const std::vector<size_t> first_caption = coco.FirstCaptionOfEachImage();
  std::vector<CaptionedImage> out;
  for (size_t i = 0; i < coco.images.size(); ++i) {
    if (first_caption[i] == corpora::CocoCaptions::kNoCaption) continue;
    out.push_back({&coco.images[i], &coco.captions[first_caption[i]].text});
  }
  return out;
}

// The coco profile's record: the image, a prompt, its caption.
Doc CaptionPair(const CaptionedImage& pair) {
  Doc d;
  d.key = fmt::format("coco-{}", pair.image->id);
  d.items.push_back(ImageOf("user", pair.image->width, pair.image->height));
  d.items.push_back(Text("user", "Describe the image briefly."));
  d.items.push_back(Text("assistant", *pair.caption));
  return d;
}

// One caption pair per COCO image (its first caption), images in file order.
std::vector<Doc> CocoDocs(const corpora::CocoCaptions& coco, uint64_t limit) {
  std::vector<Doc> docs;
  for (const CaptionedImage& pair : CaptionedImages(coco)) {
    if (limit != 0 && docs.size() >= limit) break;
    docs.push_back(CaptionPair(pair));
  }
  return docs;
}

// The video, audio and omni profiles' records (SynthOptions::profile), `limit` of them or as
// many as the COCO images allow; keys v<n>, a<n>, d<n> count each kind from 1.
std::vector<Doc> AvDocs(const corpora::CocoCaptions& coco, uint64_t limit,
                        const SynthOptions& options) {
  enum Record { kPair, kVideoRecord, kSpeechRecord, kVideoDocument };
  const std::vector<CaptionedImage> pairs = CaptionedImages(coco);
  std::vector<Doc> docs;
  uint64_t made[4] = {0, 0, 0, 0};
  uint64_t videos = 0;
  size_t next = 0;  // the next COCO image to draw
  for (uint64_t i = 0; i < limit; ++i) {
    const Record record = options.profile == "video"   ? kVideoRecord
                          : options.profile == "audio" ? kSpeechRecord
                                                       : static_cast<Record>(i % 4);
    const size_t needed = record == kVideoDocument ? 2 : 1;
    if (next + needed > pairs.size()) break;
    const CaptionedImage& pair = pairs[next];
    next += needed;
    const uint64_t n = ++made[record];
    Doc d;
    switch (record) {
      case kPair: d = CaptionPair(pair); break;
      case kVideoRecord:
        d.key = fmt::format("v{}", n);
        d.items.push_back(VideoOf("user", *pair.image, videos++, options));
        d.items.push_back(Text("user", "Describe the video."));
        d.items.push_back(Text("assistant", *pair.caption));
        break;
      case kSpeechRecord:
        d.key = fmt::format("a{}", n);
        d.items.push_back(SpeechOf("user", *pair.caption));
        d.items.push_back(Text("user", "Transcribe the speech."));
        d.items.push_back(Text("assistant", *pair.caption));
        break;
      case kVideoDocument: {
        const CaptionedImage& second = pairs[next - 1];
        d.key = fmt::format("d{}", n);
        d.format = ingest::InputFormat::kObelics;
        d.items.push_back(Text("", *pair.caption));
        d.items.push_back(VideoOf("", *second.image, videos++, options));
        d.items.push_back(Text("", *second.caption));
        break;
      }
    }
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
      "a",     "the",  "small",  "red", "dog",   "runs",  "across", "green", "field",
      "near",  "two",  "people", "sit", "on",    "bench", "with",   "blue",  "sky",
      "above", "city", "street", "at",  "night", "cat",   "sleeps", "under", "table"};
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

// A media item as records give it: its path, or with `metadata_only` what it is.
json MediaValue(const Item& item, bool metadata_only) {
  if (!metadata_only) return item.path;
  switch (item.kind) {
    case Kind::kVideo:
      return {{"duration", item.video_seconds()},
              {"fps", item.fps},
              {"width", item.width},
              {"height", item.height}};
    case Kind::kAudio:
      return {{"duration", item.speech.duration_seconds}, {"sample_rate", item.speech.sample_rate}};
    case Kind::kImage:
    case Kind::kText: break;
  }
  return {{"width", item.width}, {"height", item.height}};
}

const char* Marker(Kind kind) {
  switch (kind) {
    case Kind::kVideo: return "<video>";
    case Kind::kAudio: return "<audio>";
    case Kind::kImage:
    case Kind::kText: break;
  }
  return "<image>";
}

// LLaVA-Video's way for one item ("video": x), a list for several ("videos": [x, y]).
void PutMedia(json& out, const char* one, const char* many, json list) {
  if (list.size() == 1) {
    out[one] = std::move(list[0]);
  } else if (!list.empty()) {
    out[many] = std::move(list);
  }
}

// Render one document as a JSON line of `format`.
std::string RenderDoc(const Doc& doc, ingest::InputFormat format, bool metadata_only) {
  json out;
  out["id"] = doc.key;
  switch (format) {
    case ingest::InputFormat::kCanonical: {
      json segments = json::array(), media = json::array();
      for (const Item& item : doc.items) {
        json segment;
        if (!item.role.empty()) segment["role"] = item.role;
        if (item.is_media()) {
          segment["media"] = media.size();
          media.push_back(metadata_only ? MediaValue(item, true) : json{{"path", item.path}});
        } else {
          segment["text"] = item.text;
        }
        segments.push_back(segment);
      }
      out["segments"] = segments;
      out["media"] = media;
      break;
    }
    case ingest::InputFormat::kLlava:
    case ingest::InputFormat::kChat: {
      json turns = json::array(), images = json::array(), videos = json::array(),
           audios = json::array();
      for (const Item& item : doc.items) {
        std::string role = item.role.empty() ? "user" : item.role;
        bool llava = format == ingest::InputFormat::kLlava;
        std::string role_name = llava ? (role == "user" ? "human" : "gpt") : role;
        const char* role_key = llava ? "from" : "role";
        if (turns.empty() || turns.back()[role_key] != role_name) {
          turns.push_back(llava ? json{{"from", role_name}, {"value", ""}}
                                : json{{"role", role_name}, {"content", json::array()}});
        }
        json& turn = turns.back();
        if (llava) {
          std::string value = turn["value"].get<std::string>();
          if (!value.empty()) value += item.is_media() ? "" : "\n";
          value += item.is_media() ? Marker(item.kind) : item.text;
          turn["value"] = value;
          if (item.is_media()) {
            (item.kind == Kind::kVideo   ? videos
             : item.kind == Kind::kAudio ? audios
                                         : images)
                .push_back(MediaValue(item, metadata_only));
          }
        } else if (item.is_media()) {
          turn["content"].push_back(
              {{"type", "image"}, {"image", MediaValue(item, metadata_only)}});
        } else {
          turn["content"].push_back({{"type", "text"}, {"text", item.text}});
        }
      }
      if (format == ingest::InputFormat::kLlava) {
        if (!images.empty() || (videos.empty() && audios.empty())) out["images"] = images;
        PutMedia(out, "video", "videos", std::move(videos));
        PutMedia(out, "audio", "audios", std::move(audios));
        out["conversations"] = turns;
      } else {
        out["messages"] = turns;
      }
      break;
    }
    case ingest::InputFormat::kMmc4: {
      json texts = json::array(), info = json::array();
      for (const Item& item : doc.items) {
        if (!item.is_media()) {
          texts.push_back(item.text);
          continue;
        }
        json entry = metadata_only ? MediaValue(item, true) : json{{"image_name", item.path}};
        entry["matched_text_index"] = texts.size();  // the text that follows it
        info.push_back(entry);
      }
      if (!info.empty() && info.back()["matched_text_index"] == texts.size()) texts.push_back("");
      out["text_list"] = texts;
      out["image_info"] = info;
      break;
    }
    case ingest::InputFormat::kObelics: {
      json texts = json::array(), images = json::array();
      // A video sits among the images as {"video": ...}, as OBELICS-style video corpora write it.
      for (const Item& item : doc.items) {
        texts.push_back(item.is_media() ? json(nullptr) : json(item.text));
        json value = item.is_media() ? MediaValue(item, metadata_only) : json(nullptr);
        images.push_back(item.kind == Kind::kVideo ? json{{"video", std::move(value)}} : value);
      }
      out["texts"] = texts;
      out["images"] = images;
      break;
    }
    case ingest::InputFormat::kWebDataset:  // written by WebDatasetMembers
    case ingest::InputFormat::kAuto: break;
  }
  return out.dump() + "\n";
}

// A caption pair (coco's or tiny's: the image first, the caption last) as WebDataset members,
// LAION's way: <key>.<image ext>, <key>.txt (the caption) and <key>.json ({"key", "caption",
// "width", "height"}); the user's prompt has no place in a WebDataset sample.
void AppendWebDatasetMembers(const Doc& doc, std::string image_bytes,
                             std::vector<ingest::WdsMember>& members) {
  const Item* image = &doc.items.front();
  const Item* caption = &doc.items.back();
  const std::string ext = image->path.substr(image->path.rfind('.'));
  members.push_back({doc.key + ext, std::move(image_bytes), {}});
  members.push_back({doc.key + ".txt", caption->text, {}});
  json meta = {{"key", doc.key},
               {"caption", caption->text},
               {"width", image->width},
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

// One media file to make, or (a speech clip under --metadata-only) to measure.
struct MediaJob {
  Item* item = nullptr;
  uint64_t seed = 0;  // images' and videos' content
  media::ImageFormat image_format = media::ImageFormat::kJpeg;
  VideoFormat video_format = VideoFormat::kMp4;
  AudioFormat audio_format = AudioFormat::kWav;
  uint64_t size_bytes = 0;  // of the file written
  std::string encoded;      // an image's bytes, kept for a WebDataset instead of a file
};

// Make (or measure) one job's medium; each depends only on its own job, so jobs run in parallel.
Status RunMediaJob(MediaJob& job, const SynthOptions& options, bool keep_bytes) {
  Item& item = *job.item;
  const std::string path = (fs::path(options.out_dir) / item.path).string();
  switch (item.kind) {
    case Kind::kImage: {
      corpora::EncodeOptions encode;
      encode.format = job.image_format;
      encode.quality = 75;
      MMPT_ASSIGN_OR_RETURN(std::string bytes, corpora::SynthesizeImageFile(item.width, item.height,
                                                                            3, job.seed, encode));
      job.size_bytes = bytes.size();
      if (keep_bytes) {
        job.encoded = std::move(bytes);
        return Status::OK();
      }
      return WriteFileAtomic(path, bytes);
    }
    case Kind::kVideo:
      MMPT_RETURN_IF_ERROR(WriteVideo(
          {item.width, item.height, item.fps, item.frames, job.video_format, job.seed}, path));
      break;
    case Kind::kAudio: {
      if (options.metadata_only) {
        // The scratch files sit beside the JSONL, named after the clip's would-be file.
        const std::string scratch =
            (fs::path(options.out_dir) / ("." + fs::path(item.path).filename().string())).string();
        MMPT_ASSIGN_OR_RETURN(item.speech, MeasureSpeech(item.text, scratch));
        return Status::OK();
      }
      MMPT_ASSIGN_OR_RETURN(item.speech, WriteSpeech(item.text, job.audio_format, path));
      break;
    }
    case Kind::kText: return Status::OK();
  }
  std::error_code error;
  job.size_bytes = fs::file_size(path, error);
  if (error) return Status::IOError("{}: {}", path, error.message());
  return Status::OK();
}

bool IsAvProfile(const std::string& profile) {
  return profile == "video" || profile == "audio" || profile == "omni";
}

// OK when `options` can be synthesized; else InvalidArgument naming the option.
Status CheckOptions(const SynthOptions& options) {
  if (options.format == ingest::InputFormat::kAuto) {
    return Status::InvalidArgument("synth needs a concrete --format, not auto");
  }
  if (options.out_dir.empty()) return Status::InvalidArgument("synth: no --out directory");
  const bool wds = options.format == ingest::InputFormat::kWebDataset;
  const bool av = IsAvProfile(options.profile);
  if (wds && (options.metadata_only || (options.profile != "coco" && options.profile != "tiny"))) {
    return Status::InvalidArgument(
        "--format wds writes caption pairs with their images: profile coco or tiny, without "
        "--metadata-only");
  }
  if (av && options.format != ingest::InputFormat::kLlava) {
    return Status::InvalidArgument(
        "--profile {} writes LLaVA records (omni adds OBELICS documents): use --format llava",
        options.profile);
  }
  if (av && options.profile != "audio" &&
      !(options.min_duration > 0 && options.min_duration <= options.max_duration &&
        options.max_duration <= 3600)) {
    return Status::InvalidArgument(
        "--profile {}: need 0 < --min-duration <= --max-duration <= 3600 seconds, not {} and {}",
        options.profile, options.min_duration, options.max_duration);
  }
  MMPT_RETURN_IF_ERROR(PickFormat(options.image_format, 0).status());
  MMPT_RETURN_IF_ERROR(PickVideoFormat(options.video_format, 0).status());
  MMPT_RETURN_IF_ERROR(PickAudioFormat(options.audio_format, 0).status());
  return Status::OK();
}

// The profile's documents (real captions, sizes and documents from ../shared/data/real, or
// drawn sizes); `report` notes whether sizes were drawn.
Result<std::vector<Doc>> ProfileDocs(const SynthOptions& options, SynthReport& report) {
  const bool av = IsAvProfile(options.profile);
  std::vector<Doc> docs;
  // The given file, or the real one.
  auto or_real = [](const std::string& path, const char* real_file) {
    return path.empty() ? corpora::RealDataPath(real_file) : path;
  };
  if (options.profile == "coco" || av) {
    const std::string path = or_real(options.source_path, corpora::kCocoCaptionsFile);
    MMPT_ASSIGN_OR_RETURN(corpora::CocoCaptions coco, corpora::ReadCocoCaptions(path));
    docs = av ? AvDocs(coco, options.samples == 0 ? kDefaultAvSamples : options.samples, options)
              : CocoDocs(coco, options.samples);
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
    return Status::InvalidArgument(
        "unknown synth profile '{}' (expected coco, mmc4, tiny, video, audio or omni)",
        options.profile);
  }
  return docs;
}

// Every medium of `docs`, named (running counters per kind pick the formats for "mix"), as the
// jobs that make them; which kinds there are.
struct NamedMedia {
  std::vector<MediaJob> jobs;
  bool has_kind[4] = {false, false, false, false};
};
NamedMedia NameMedia(std::vector<Doc>& docs, const SynthOptions& options, const std::string& name,
                     SynthReport& report) {
  NamedMedia named;
  std::vector<MediaJob>& jobs = named.jobs;
  for (size_t d = 0; d < docs.size(); ++d) {
    size_t k = 0;
    for (Item& item : docs[d].items) {
      if (!item.is_media()) continue;
      MediaJob job;
      job.item = &item;
      switch (item.kind) {
        case Kind::kImage:
          job.image_format = *PickFormat(options.image_format, report.images);
          job.seed = options.seed * 1000003 + report.images++;
          item.path = fmt::format("images/{}-{:06}-{}.{}", name, d, k++,
                                  MediaExtension(static_cast<uint8_t>(job.image_format)));
          break;
        case Kind::kVideo:  // one video or speech clip a document, named after it
          job.video_format = *PickVideoFormat(options.video_format, report.videos);
          job.seed = options.seed * 1000003 + report.videos++;
          item.path =
              fmt::format("videos/{}-{}.{}", name, docs[d].key, Extension(job.video_format));
          break;
        case Kind::kAudio:
          job.audio_format = *PickAudioFormat(options.audio_format, report.audio_clips++);
          item.path = fmt::format("audio/{}-{}.{}", name, docs[d].key, Extension(job.audio_format));
          break;
        case Kind::kText: break;
      }
      named.has_kind[static_cast<int>(item.kind)] = true;
      // Under --metadata-only only a speech clip has work: its duration is measured.
      if (!options.metadata_only || item.kind == Kind::kAudio) jobs.push_back(std::move(job));
    }
  }
  return named;
}

}  // namespace

Result<SynthReport> Synthesize(const SynthOptions& options) {
  MMPT_RETURN_IF_ERROR(CheckOptions(options));
  const bool wds = options.format == ingest::InputFormat::kWebDataset;
  const bool av = IsAvProfile(options.profile);
  SynthReport report;
  MMPT_ASSIGN_OR_RETURN(std::vector<Doc> docs, ProfileDocs(options, report));
  const std::string name = options.name.empty() ? options.profile : options.name;
  // Name every medium first, then make them in parallel; each file depends only on its item
  // and seed. A WebDataset keeps the encoded images for its tar instead of writing files.
  NamedMedia named = NameMedia(docs, options, name, report);
  std::vector<MediaJob>& jobs = named.jobs;
  const bool* has_kind = named.has_kind;
  std::error_code error;
  fs::create_directories(options.out_dir, error);
  static constexpr std::pair<Kind, const char*> kDirs[] = {
      {Kind::kImage, "images"}, {Kind::kVideo, "videos"}, {Kind::kAudio, "audio"}};
  for (const auto& [kind, dir] : kDirs) {
    // The image profiles make images/ even for --metadata-only, as they always have.
    const bool wanted = kind == Kind::kImage && !av
                            ? !wds
                            : has_kind[static_cast<int>(kind)] && !options.metadata_only;
    if (!error && wanted) fs::create_directories(fs::path(options.out_dir) / dir, error);
  }
  if (error) return Status::IOError("{}: cannot create: {}", options.out_dir, error.message());

  std::vector<Status> statuses(jobs.size());
  ThreadPool pool(options.threads);
  pool.ParallelFor(0, jobs.size(), [&](size_t j) {
    statuses[j] = RunMediaJob(jobs[j], options, wds).WithContext(jobs[j].item->path);
  });
  for (size_t j = 0; j < jobs.size(); ++j) {
    MMPT_RETURN_IF_ERROR(statuses[j]);
    const Item& item = *jobs[j].item;
    switch (item.kind) {
      case Kind::kImage: report.image_bytes += jobs[j].size_bytes; break;
      case Kind::kVideo: report.video_bytes += jobs[j].size_bytes; break;
      case Kind::kAudio:
        report.audio_bytes += jobs[j].size_bytes;
        report.audio_seconds += item.speech.duration_seconds;
        break;
      case Kind::kText: break;
    }
  }
  for (const Doc& doc : docs) {
    for (const Item& item : doc.items) {
      if (item.kind == Kind::kVideo) report.video_seconds += item.video_seconds();
    }
  }
  std::string out;
  if (wds) {
    std::vector<ingest::WdsMember> members;
    for (size_t d = 0; d < docs.size(); ++d) {  // one image a document, in order
      AppendWebDatasetMembers(docs[d], std::move(jobs[d].encoded), members);
    }
    MMPT_ASSIGN_OR_RETURN(out, ingest::WriteWebDatasetTar(members, /*gzip=*/false));
  } else {
    for (const Doc& doc : docs) {
      out += RenderDoc(doc, doc.format == ingest::InputFormat::kAuto ? options.format : doc.format,
                       options.metadata_only);
    }
  }
  report.path = (fs::path(options.out_dir) / (name + (wds ? ".tar" : ".jsonl"))).string();
  MMPT_RETURN_IF_ERROR(WriteFileAtomic(report.path, out));
  report.samples = docs.size();
  if (report.audio_clips > 0) {
    MMPT_ASSIGN_OR_RETURN(const std::string base, text::FindTokenizer());
    report.tokenizer = (fs::path(options.out_dir) / (name + ".tokenizer.json")).string();
    MMPT_RETURN_IF_ERROR(WriteOmniTokenizer(base, report.tokenizer, OmniModel::kQwen25Omni));
    report.qwen3_omni_tokenizer =
        (fs::path(options.out_dir) / (name + ".qwen3-omni.tokenizer.json")).string();
    MMPT_RETURN_IF_ERROR(
        WriteOmniTokenizer(base, report.qwen3_omni_tokenizer, OmniModel::kQwen3Omni));
  }
  return report;
}

}  // namespace mmpt::corpora
