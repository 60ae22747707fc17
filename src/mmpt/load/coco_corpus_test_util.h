#pragma once

// A small prepared dataset built from the real COCO caption file for the load tests: the real
// image sizes and captions of the first images of ../shared/data/real/coco_val2017_captions.json,
// synthetic JPEG pixels of those sizes, rendered through the default chat template with the
// Qwen3 tokenizer and written through the store's shard writer exactly as prepare writes them.
// Test-only.

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/corpora/image_encode.h"
#include "mmpt/corpora/image_synth.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/cost/presets.h"
#include "mmpt/store/manifest.h"
#include "mmpt/store/planning_table.h"
#include "mmpt/store/sample_render.h"
#include "mmpt/store/shard_writer.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::load::testing {

/// Write `num_samples` COCO caption pairs (user: image + prompt; assistant: caption) as
/// `shards` shards of source "coco" into `dir` (emptied first). Errors: NotFound when the real
/// data or the tokenizer is missing (install with `make deps`), others from the writer.
inline Status BuildCocoDataset(const std::string& dir, size_t num_samples, size_t shards = 2) {
  namespace fs = std::filesystem;
  MMPT_ASSIGN_OR_RETURN(
      corpora::CocoCaptions coco,
      corpora::ReadCocoCaptions(corpora::RealDataPath(corpora::kCocoCaptionsFile)));
  if (num_samples > coco.images.size()) {
    return Status::InvalidArgument("{} samples asked, the COCO file has {} images", num_samples,
                                   coco.images.size());
  }
  const std::vector<size_t> first_caption = coco.FirstCaptionOfEachImage();
  MMPT_ASSIGN_OR_RETURN(std::string tokenizer_path, text::FindTokenizer());
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tokenizer,
                        text::LoadTokenizer(tokenizer_path));
  MMPT_ASSIGN_OR_RETURN(text::ChatTemplate chat,
                        text::ChatTemplate::Load(std::string(cost::Defaults::kChatTemplate)));
  const std::string chat_json = chat.json;
  MMPT_ASSIGN_OR_RETURN(text::ChatRenderer renderer,
                        text::ChatRenderer::Create(std::move(chat), *tokenizer));
  text::RenderedText rendered;
  fs::remove_all(dir);
  fs::create_directories(dir);
  store::Manifest manifest;
  manifest.tokenizer = tokenizer_path;
  manifest.vision = "qwen2-vl";
  manifest.chat_template = chat_json;
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
      s.segments.push_back({"user", 0, true, "", 0});
      s.segments.push_back({"user", 0, false, prompt, 0});
      s.segments.push_back({"assistant", 1, false, caption, 0});
      MMPT_RETURN_IF_ERROR(store::RenderSample(renderer, s, nullptr, &rendered));
      std::vector<store::MediaBlob> blobs;
      blobs.push_back({std::move(bytes), static_cast<uint8_t>(media::ImageFormat::kJpeg)});
      MMPT_RETURN_IF_ERROR(
          writer.Add(std::move(s), std::move(blobs), rendered.ids, rendered.media_positions));
    }
    MMPT_ASSIGN_OR_RETURN(store::ShardInfo info, writer.Finish());
    manifest.shards.push_back(std::move(info));
  }
  return store::FinishDataset(dir, manifest);
}

}  // namespace mmpt::load::testing
