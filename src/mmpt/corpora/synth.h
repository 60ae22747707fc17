#pragma once

// `mmpt synth`: a corpus with real image files of chosen (or real) pixel sizes and texts, in any
// input format, for tests, benchmarks and the demo.

#include <cstdint>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/adapter.h"

namespace mmpt::corpora {

struct SynthOptions {
  /// "coco": one caption pair per image of COCO val2017 (real sizes and captions, from
  /// `source_path`, default ../shared/data/real/coco_val2017_captions.json);
  /// "mmc4": the real mmc4 documents of `source_path` (default
  /// ../shared/data/real/mmc4_core_ff_docs.jsonl); mmc4 records no image sizes, so image j of
  /// document d takes the real size of COCO image corpora::Mmc4CocoImage(seed, d, j) of
  /// `coco_path` (as the planner's built-in mmc4 corpus does; COCO sizes are at most 640 px);
  /// "tiny": invented caption pairs with sizes drawn in [min_side, max_side].
  std::string profile = "coco";
  std::string source_path;        // "" = the profile's default real file
  std::string coco_path;          // COCO file for mmc4's sizes; "" = the real one
  std::string out_dir;            // receives <name>.jsonl and images/, or <name>.tar (wds)
  std::string name;               // "" = the profile name
  /// Any but kAuto; kWebDataset writes one tar of caption pairs (profiles coco and tiny):
  /// <key>.<image ext>, <key>.txt with the caption, <key>.json with it and the image's size.
  store::InputFormat format = store::InputFormat::kLlava;
  uint64_t samples = 0;           // 0 = every record of the source (tiny: 100)
  std::string image_format = "jpeg";  // jpeg, png, webp, or mix (cycled per image)
  bool metadata_only = false;     // write width/height instead of image files
  uint32_t min_side = 64;         // tiny profile
  uint32_t max_side = 640;
  uint64_t seed = 1;
  size_t jobs = 0;                // image encoding threads; 0 = one per hardware thread
};

struct SynthReport {
  std::string path;  // the .jsonl written, or the .tar
  uint64_t samples = 0;
  uint64_t images = 0;
  uint64_t image_bytes = 0;
  bool sizes_drawn = false;  // image sizes are not the images' own: drawn (tiny) or a seeded
                             // COCO image's (mmc4)
};

/// Write the corpus. Same options, same bytes. Errors: NotFound (source file), Corrupt (a
/// source record that is not what the profile expects, naming file and record),
/// InvalidArgument (options), IOError.
Result<SynthReport> Synthesize(const SynthOptions& options);

}  // namespace mmpt::corpora
