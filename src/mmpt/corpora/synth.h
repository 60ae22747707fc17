#pragma once

// `mmpt synth`: a corpus with real image, video and speech files of chosen (or real) sizes and
// texts, in any input format, for tests, benchmarks and the demo.

#include <cstdint>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/ingest/adapter.h"

namespace mmpt::corpora {

struct SynthOptions {
  /// "coco": one caption pair per image of COCO val2017 (real sizes and captions, from
  /// `source_path`, default ../shared/data/real/coco_val2017_captions.json);
  /// "mmc4": the real mmc4 documents of `source_path` (default
  /// ../shared/data/real/mmc4_core_ff_docs.jsonl); mmc4 records no image sizes, so image j of
  /// document d takes the real size of COCO image corpora::Mmc4CocoImage(seed, d, j) of
  /// `coco_path` (as the planner's built-in mmc4 corpus does; COCO sizes are at most 640 px);
  /// "tiny": invented caption pairs with sizes drawn in [min_side, max_side];
  /// "video": LLaVA-Video records, one video per COCO image of `source_path` in file order, at
  /// its real size rounded down to even (4:2:0 chroma), its first caption as the answer, fps
  /// drawn from 10, 24, 25, 30 and duration from [min_duration, max_duration] with the seed,
  /// picture ffmpeg's moving testsrc2 under a box the seed places (av_synth.h);
  /// "audio": speech records, each COCO caption in file order spoken by espeak-ng, the caption
  /// as the transcript;
  /// "omni": records cycling COCO caption pair (as "coco"), video record, speech record and an
  /// OBELICS document [caption, video, caption], each taking the next COCO images.
  /// video, audio and omni write --format llava (omni's documents are OBELICS records).
  std::string profile = "coco";
  std::string source_path;  // "" = the profile's default real file
  std::string coco_path;    // COCO file for mmc4's sizes; "" = the real one
  std::string out_dir;      // receives <name>.jsonl and images/, or <name>.tar (wds)
  std::string name;         // "" = the profile name
  /// Any but kAuto; kWebDataset writes one tar of caption pairs (profiles coco and tiny):
  /// <key>.<image ext>, <key>.txt with the caption, <key>.json with it and the image's size.
  ingest::InputFormat format = ingest::InputFormat::kLlava;
  uint64_t samples = 0;               // 0 = every record of the source (tiny: 100; video, audio,
                                      // omni: kDefaultAvSamples)
  std::string image_format = "jpeg";  // jpeg, png, webp, or mix (cycled per image)
  std::string video_format = "mix";   // mp4 (h264), webm (vp9), avi (mjpeg), or mix (cycled)
  std::string audio_format = "mix";   // wav, flac, mp3, ogg (vorbis), or mix (cycled)
  double min_duration = 1;            // seconds of a video, drawn per video in [min, max]
  double max_duration = 10;
  /// Write each medium's description instead of a file: an image's {"width", "height"}, a
  /// video's {"duration", "fps", "width", "height"}, a speech clip's {"duration",
  /// "sample_rate"} (espeak-ng still speaks it to measure it, into a scratch file it removes).
  bool metadata_only = false;
  uint32_t min_side = 64;  // tiny profile
  uint32_t max_side = 640;
  uint64_t seed = 1;
  size_t threads = 0;  // media encoding threads; 0 = one per hardware thread
};

/// Samples profiles video, audio and omni write when `samples` is 0.
inline constexpr uint64_t kDefaultAvSamples = 20;

struct SynthReport {
  std::string path;  // the .jsonl written, or the .tar
  uint64_t samples = 0;
  uint64_t images = 0;
  uint64_t image_bytes = 0;
  uint64_t videos = 0;
  uint64_t video_bytes = 0;
  double video_seconds = 0;
  uint64_t audio_clips = 0;
  uint64_t audio_bytes = 0;
  double audio_seconds = 0;
  bool sizes_drawn = false;  // image sizes are not the images' own: drawn (tiny) or a seeded
                             // COCO image's (mmc4)
  /// A corpus with speech: <name>.tokenizer.json beside it, Qwen2.5-Omni's tokenizer made from
  /// the default one (omni_tokenizer.h), to prepare it with the qwen_omni template; else "".
  std::string tokenizer;
  /// Likewise <name>.qwen3-omni.tokenizer.json, Qwen3-Omni's, for the qwen3_omni template.
  std::string qwen3_omni_tokenizer;
};

/// Write the corpus. Same options, same bytes. Errors: NotFound (source file), Corrupt (a
/// source record that is not what the profile expects, naming file and record),
/// InvalidArgument (options), IOError, Internal (ffmpeg or espeak-ng failed: the command and
/// the tail of its output).
Result<SynthReport> Synthesize(const SynthOptions& options);

}  // namespace mmpt::corpora
