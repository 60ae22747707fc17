// `mmpt synth`: write a corpus with real image, video and speech files (src/mmpt/corpora/synth.h).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "command.h"
#include "mmpt/corpora/synth.h"
#include "options.h"

namespace mmpt::cli {
namespace {

struct SynthArgs {
  corpora::SynthOptions options;
  std::string format = "llava";
  bool json = false;
};

Status Run(SynthArgs args) {
  MMPT_ASSIGN_OR_RETURN(args.options.format, ingest::ParseInputFormat(args.format));
  MMPT_ASSIGN_OR_RETURN(corpora::SynthReport report, corpora::Synthesize(args.options));
  if (args.json) {
    nlohmann::ordered_json out = {{"path", report.path},
                                  {"samples", report.samples},
                                  {"images", report.images},
                                  {"image_bytes", report.image_bytes},
                                  {"videos", report.videos},
                                  {"video_bytes", report.video_bytes},
                                  {"video_seconds", report.video_seconds},
                                  {"audio_clips", report.audio_clips},
                                  {"audio_bytes", report.audio_bytes},
                                  {"audio_seconds", report.audio_seconds},
                                  {"sizes_drawn", report.sizes_drawn},
                                  {"tokenizer", report.tokenizer},
                                  {"qwen3_omni_tokenizer", report.qwen3_omni_tokenizer}};
    std::printf("%s\n", out.dump(2).c_str());
    return Status::OK();
  }
  std::printf("wrote %s: %llu samples, %llu images (%llu bytes)%s\n", report.path.c_str(),
              static_cast<unsigned long long>(report.samples),
              static_cast<unsigned long long>(report.images),
              static_cast<unsigned long long>(report.image_bytes),
              !report.sizes_drawn ? "; real image sizes"
              : args.options.profile == "mmc4"
                  ? "; image sizes of seeded COCO images, not their own"
                  : "; image sizes drawn from a seeded distribution");
  if (report.videos > 0) {
    std::printf("  %llu videos, %.1f s (%llu bytes)\n",
                static_cast<unsigned long long>(report.videos), report.video_seconds,
                static_cast<unsigned long long>(report.video_bytes));
  }
  if (report.audio_clips > 0) {
    std::printf("  %llu speech clips, %.1f s (%llu bytes)\n",
                static_cast<unsigned long long>(report.audio_clips), report.audio_seconds,
                static_cast<unsigned long long>(report.audio_bytes));
    std::printf(
        "  %s: Qwen2.5-Omni's tokenizer, for the speech: prepare with --chat-template "
        "qwen_omni --tokenizer %s\n",
        report.tokenizer.c_str(), report.tokenizer.c_str());
    std::printf("  %s: Qwen3-Omni's, for --chat-template qwen3_omni --audio qwen3-omni\n",
                report.qwen3_omni_tokenizer.c_str());
  }
  return Status::OK();
}

}  // namespace

Command SynthCommand() {
  return {
      "synth",
      "Generate a corpus with real image (JPEG/PNG/WebP), video (ffmpeg) and speech "
      "(espeak-ng) files of real or chosen sizes",
      [](CLI::App& app) -> Action {
        auto args = std::make_shared<SynthArgs>();
        corpora::SynthOptions& o = args->options;
        app.add_option(
               "--profile", o.profile,
               "coco (real COCO sizes + captions), mmc4 (real documents at seeded COCO image "
               "sizes), tiny (drawn sizes), video (videos at COCO sizes + captions), audio "
               "(COCO captions spoken), omni (caption pairs, videos, speech, documents with "
               "videos)")
            ->capture_default_str();
        app.add_option("--source", o.source_path,
                       "Real metadata file (default: ../shared/data/real/...)");
        app.add_option("--coco", o.coco_path,
                       "mmc4: COCO captions file whose image sizes its images take "
                       "(default: the real one)");
        app.add_option("--out", o.out_dir,
                       "Output directory (<name>.jsonl and images/, videos/, audio/, or "
                       "<name>.tar)")
            ->required();
        app.add_option("--name", o.name, "Corpus name (default: the profile)");
        app.add_option("--format", args->format,
                       "Input format to write: canonical, llava, mmc4, obelics, chat, or wds "
                       "(a WebDataset tar <name>.tar of caption pairs: profile coco or tiny); "
                       "video, audio and omni write llava (omni's documents as OBELICS)")
            ->capture_default_str();
        app.add_option("--samples", o.samples,
                       "Samples to write (0: all of the source; tiny: 100; video, audio, omni: " +
                           std::to_string(corpora::kDefaultAvSamples) + ")")
            ->capture_default_str();
        app.add_option("--image-format", o.image_format, "jpeg, png, webp or mix")
            ->capture_default_str();
        app.add_option("--video-format", o.video_format,
                       "mp4 (h264), webm (vp9), avi (mjpeg) or mix (cycled)")
            ->capture_default_str();
        app.add_option("--audio-format", o.audio_format,
                       "wav, flac, mp3, ogg (vorbis) or mix (cycled)")
            ->capture_default_str();
        app.add_option("--min-duration", o.min_duration, "Shortest video, seconds")
            ->capture_default_str();
        app.add_option("--max-duration", o.max_duration, "Longest video, seconds")
            ->capture_default_str();
        app.add_flag("--metadata-only", o.metadata_only,
                     "Write image width/height, video duration/fps/width/height and speech "
                     "duration/sample_rate instead of files");
        app.add_option("--min-side", o.min_side, "tiny: smallest image side")
            ->capture_default_str();
        app.add_option("--max-side", o.max_side, "tiny: largest image side")->capture_default_str();
        app.add_option("--seed", o.seed,
                       "Seed for drawn or picked sizes, video lengths and image content")
            ->capture_default_str();
        AddThreads(app, &o.threads);
        AddJson(app, &args->json);
        return [args] { return Run(*args); };
      },
  };
}

}  // namespace mmpt::cli
