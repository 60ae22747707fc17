#pragma once

// A small prepared dataset built from the real COCO caption file for the load tests: the real
// image sizes and captions of the first images of ../shared/data/real/coco_val2017_captions.json,
// synthetic JPEG pixels of those sizes, token ids from the Qwen3 tokenizer, written through the
// store's shard writer exactly as prepare writes them. Test-only.

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/corpora/image_encode.h"
#include "mmpt/corpora/image_synth.h"
#include "mmpt/store/manifest.h"
#include "mmpt/store/shard_writer.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::load::testing {

/// Write `num_samples` COCO caption pairs (user: image + prompt; assistant: caption) as
/// `shards` shards of source "coco" into `dir` (emptied first). Errors: NotFound when the real
/// data or the tokenizer is missing (install with `make deps`), others from the writer.
inline Status BuildCocoDataset(const std::string& dir, size_t num_samples, size_t shards = 2) {
  namespace fs = std::filesystem;
  MMPT_ASSIGN_OR_RETURN(corpora::CocoCaptions coco,
                        corpora::ReadCocoCaptions(corpora::RealDataPath(corpora::kCocoCaptionsFile)));
  if (num_samples > coco.images.size()) {
    return Status::InvalidArgument("{} samples asked, the COCO file has {} images", num_samples,
                                   coco.images.size());
  }
  const std::vector<size_t> first_caption = coco.FirstCaptionOfEachImage();
  MMPT_ASSIGN_OR_RETURN(std::string tokenizer_path, text::FindTokenizer());
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tokenizer,
                        text::LoadTokenizer(tokenizer_path));
  fs::remove_all(dir);
  fs::create_directories(dir);
  store::Manifest manifest;
  manifest.tokenizer = tokenizer_path;
  manifest.vision_preset = "qwen2-vl";
  const size_t per_shard = (num_samples + shards - 1) / shards;
  for (size_t shard = 0, i = 0; shard < shards && i < num_samples; ++shard) {
    char stem[32];
    std::snprintf(stem, sizeof(stem), "coco/%05zu", shard);
    store::ShardWriter writer(dir, stem, "coco");
    for (size_t j = 0; j < per_shard && i < num_samples; ++j, ++i) {
      const corpora::CocoImage& image = coco.images[i];
      const uint32_t width = image.width, height = image.height;
      corpora::EncodeOptions jpeg;
      jpeg.quality = 85;
      MMPT_ASSIGN_OR_RETURN(std::string bytes,
                            corpora::SynthesizeImageFile(width, height, 3, i, jpeg));
      store::Sample s;
      s.key = image.file_name;
      s.source = "coco";
      s.media.push_back({"val2017/" + s.key, "", width, height, 1});
      const std::string prompt = "Describe the image.";
      const std::string caption = first_caption[i] == corpora::CocoCaptions::kNoCaption
                                      ? std::string()
                                      : coco.captions[first_caption[i]].text;
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
