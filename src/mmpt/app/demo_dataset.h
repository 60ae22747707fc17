#pragma once

// A small real-data dataset for `mmpt demo`: synthesize COCO caption pairs and mmc4 documents,
// then prepare them, in one call.

#include <cstdint>
#include <string>

#include "mmpt/core/status.h"
#include "mmpt/corpora/synth.h"
#include "mmpt/ingest/prepare.h"

namespace mmpt::app {

struct DemoDatasetOptions {
  std::string work_dir;         // receives corpus/ (inputs and images) and dataset/
  uint64_t coco_samples = 200;  // COCO val2017 images (real sizes and captions)
  uint64_t mmc4_docs = 20;      // mmc4 documents (image sizes drawn)
  std::string tokenizer_path;   // "" = text::FindTokenizer()'s default
  std::string vision{cost::Defaults::kVision};
  size_t threads = 0;
  bool progress = true;
};

struct DemoDataset {
  std::string dataset_dir;
  corpora::SynthReport coco;
  corpora::SynthReport mmc4;
  ingest::PrepareReport prepare;
};

/// Synthesize the two corpora from ../shared/data/real/ and prepare them into
/// `work_dir`/dataset (sources "coco" and "mmc4"). Errors: those of Synthesize, UseTokenizer
/// and Prepare.
Result<DemoDataset> BuildDemoDataset(const DemoDatasetOptions& options);

/// The omni corpus the demo plans: `samples` records of `mmpt synth --profile omni
/// --metadata-only` from the real COCO captions and sizes (caption pairs, videos, speech
/// measured by espeak-ng, documents holding a video; no media files), prepared into
/// `work_dir`/omni-dataset through the qwen_omni chat template with the Qwen2.5-Omni tokenizer
/// synth writes beside the corpus (the default tokenizer has no audio tokens).
struct OmniDataset {
  std::string dataset_dir;
  corpora::SynthReport synth;
  ingest::PrepareReport prepare;
};
/// Errors: as BuildDemoDataset.
Result<OmniDataset> BuildOmniDataset(const DemoDatasetOptions& options, uint64_t samples);

/// The Qwen3-VL corpus the demo plans: `images` COCO caption pairs (`mmpt synth --profile coco
/// --metadata-only`: real sizes and captions) and `videos` captioned videos (`--profile video
/// --metadata-only`: COCO sizes and captions, frame rates and lengths drawn), prepared into
/// `work_dir`/qwen3-vl-dataset (sources "coco" and "video") under the qwen3-vl vision preset
/// (options.vision is ignored) and the qwen3_vl chat template, which writes each video as
/// timestamped temporal groups, one vision item each.
struct Qwen3VlDataset {
  std::string dataset_dir;
  corpora::SynthReport images;
  corpora::SynthReport videos;
  ingest::PrepareReport prepare;
};
/// Errors: as BuildDemoDataset.
Result<Qwen3VlDataset> BuildQwen3VlDataset(const DemoDatasetOptions& options, uint64_t images,
                                           uint64_t videos);

}  // namespace mmpt::app
