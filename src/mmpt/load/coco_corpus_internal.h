#pragma once

// A small prepared dataset built from the real COCO caption file for the load tests: the real
// image sizes and captions of the first images of ../shared/data/real/coco_val2017_captions.json,
// synthetic JPEG pixels of those sizes, token ids from the Qwen3 tokenizer, written through the
// store's shard writer exactly as prepare writes them. Test-only.

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/media/image_encode.h"
#include "mmpt/media/image_synth.h"
#include "mmpt/store/manifest.h"
#include "mmpt/store/shard_writer.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::load::testing {

inline constexpr char kCocoCaptions[] =
    MMPT_SOURCE_DIR "/../shared/data/real/coco_val2017_captions.json";

/// Write `num_samples` COCO caption pairs (user: image + prompt; assistant: caption) as
/// `shards` shards of source "coco" into `dir` (emptied first). Errors: NotFound when the real
/// data or the tokenizer is missing (install with `make deps`), others from the writer.
inline Status BuildCocoDataset(const std::string& dir, size_t num_samples, size_t shards = 2) {
  namespace fs = std::filesystem;
  std::ifstream in(kCocoCaptions);
  if (!in) {
    return Status::NotFound("{}: real data missing (see ../shared/data/real)", kCocoCaptions);
  }
  nlohmann::json coco = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (coco.is_discarded()) return Status::Corrupt("{}: not JSON", kCocoCaptions);
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tokenizer,
                        text::LoadTokenizer(text::DefaultTokenizerPath()));
  std::map<int64_t, std::string> caption_of;
  for (const auto& a : coco["annotations"]) {
    caption_of.emplace(a["image_id"].get<int64_t>(), a["caption"].get<std::string>());
  }
  fs::remove_all(dir);
  fs::create_directories(dir);
  store::Manifest manifest;
  manifest.tokenizer = text::DefaultTokenizerPath();
  manifest.vision_preset = "qwen2-vl";
  const auto& images = coco["images"];
  const size_t per_shard = (num_samples + shards - 1) / shards;
  for (size_t shard = 0, i = 0; shard < shards && i < num_samples; ++shard) {
    char stem[32];
    std::snprintf(stem, sizeof(stem), "coco/%05zu", shard);
    store::ShardWriter writer(dir, stem, "coco");
    for (size_t j = 0; j < per_shard && i < num_samples; ++j, ++i) {
      const auto& image = images[i];
      const uint32_t width = image["width"].get<uint32_t>();
      const uint32_t height = image["height"].get<uint32_t>();
      media::EncodeOptions jpeg;
      jpeg.quality = 85;
      MMPT_ASSIGN_OR_RETURN(std::string bytes,
                            media::SynthesizeImageFile(width, height, 3, i, jpeg));
      store::Sample s;
      s.key = image["file_name"].get<std::string>();
      s.source = "coco";
      s.media.push_back({"val2017/" + s.key, "", width, height, 1});
      const std::string prompt = "Describe the image.";
      const std::string caption = caption_of[image["id"].get<int64_t>()];
      MMPT_ASSIGN_OR_RETURN(std::vector<text::TokenId> prompt_ids, tokenizer->Encode(prompt));
      MMPT_ASSIGN_OR_RETURN(std::vector<text::TokenId> caption_ids, tokenizer->Encode(caption));
      s.segments.push_back({"user", true, "", 0, -1});
      s.segments.push_back({"user", false, prompt, 0, static_cast<int64_t>(prompt_ids.size())});
      s.segments.push_back(
          {"assistant", false, caption, 0, static_cast<int64_t>(caption_ids.size())});
      std::vector<int32_t> ids = prompt_ids;
      ids.insert(ids.end(), caption_ids.begin(), caption_ids.end());
      std::vector<store::MediaBlob> blobs;
      blobs.push_back({std::move(bytes), static_cast<uint8_t>(media::ImageFormat::kJpeg)});
      MMPT_RETURN_IF_ERROR(writer.Add(std::move(s), std::move(blobs), ids));
    }
    MMPT_ASSIGN_OR_RETURN(store::ShardInfo info, writer.Finish());
    manifest.shards.push_back(std::move(info));
  }
  return store::WriteManifest(dir, manifest);
}

}  // namespace mmpt::load::testing
