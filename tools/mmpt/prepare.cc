// `mmpt prepare`: input JSONL + media, or WebDataset tars → an indexed, sharded dataset
// (src/mmpt/ingest/prepare.h).
#include "mmpt/ingest/prepare.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "command.h"
#include "mmpt/comm/communicator.h"
#include "options.h"

namespace mmpt::cli {
namespace {

// The command line: the options' values go straight into PrepareOptions, so its defaults are
// the command's.
struct PrepareArgs {
  std::vector<std::string> inputs;
  std::string tokenizer;
  std::string format = "auto";
  std::string on_error{ErrorPolicyName(ingest::PrepareOptions{}.on_error)};
  bool json = false;
  ingest::PrepareOptions options;
};

// The report as one JSON object (what Summary() prints as text).
std::string ReportJson(const ingest::PrepareReport& r) {
  nlohmann::ordered_json out = {{"records", r.records},
                                {"samples", r.samples},
                                {"skipped", r.skipped},
                                {"shards", r.shards},
                                {"media", r.media},
                                {"text_tokens", r.text_tokens},
                                {"input_bytes", r.input_bytes},
                                {"output_bytes", r.output_bytes},
                                {"seconds", r.seconds},
                                {"skipped_by_reason", r.skipped_by_reason},
                                {"examples", r.examples}};
  return out.dump(2) + "\n";
}

Status Run(const PrepareArgs& args) {
  ingest::PrepareOptions options = args.options;
  MMPT_ASSIGN_OR_RETURN(options.inputs, ingest::ExpandInputs(args.inputs));
  MMPT_ASSIGN_OR_RETURN(options.format, ingest::ParseInputFormat(args.format));
  MMPT_ASSIGN_OR_RETURN(options.on_error, ParseErrorPolicy(args.on_error));
  MMPT_ASSIGN_OR_RETURN(auto tokenizer, ingest::UseTokenizer(args.tokenizer, options));
  MMPT_ASSIGN_OR_RETURN(auto world, comm::WorldCommunicator());
  if (world->size() > 1) {
    // Under mpirun each rank prepares its part; rank 0 merges them into one manifest.
    if (options.num_parts != 1) {
      return Status::InvalidArgument("--parts is set by mpirun's rank count");
    }
    MMPT_ASSIGN_OR_RETURN(ingest::PrepareReport report, ingest::PrepareOnRanks(options, *world));
    const std::string text = args.json ? ReportJson(report) : report.Summary();
    std::printf("rank %u of %u: %s", world->rank(), world->size(), text.c_str());
    return Status::OK();
  }
  MMPT_ASSIGN_OR_RETURN(ingest::PrepareReport report, ingest::Prepare(options));
  std::fputs((args.json ? ReportJson(report) : report.Summary()).c_str(), stdout);
  return Status::OK();
}

}  // namespace

Command PrepareCommand() {
  return {
      "prepare",
      "Turn JSONL + media into a dataset: .jsonl, .jsonl.idx, STORED .zip, .meta, .tok, mmpt.json",
      [](CLI::App& app) -> Action {
        auto args = std::make_shared<PrepareArgs>();
        app.add_option("inputs", args->inputs,
                       "Input JSONL files or WebDataset tars (.tar, .tar.gz, .tgz), each PATH or "
                       "SOURCE=PATH (source: the file name's stem); a directory of tars, or "
                       "tars shard-0000.tar … (or quoted 'shard-{0000..0999}.tar'), make one "
                       "source (the directory's name; 'shard')")
            ->required();
        app.add_option("--out", args->options.out_dir, "Dataset directory to write")->required();
        app.add_option(
            "--tokenizer", args->tokenizer,
            "tokenizer.json or SentencePiece .model; default: $MMPT_TOKENIZER, else Qwen3's");
        app.add_option("--media-root", args->options.media_root,
                       "Directory media paths are relative to (default: each input's directory)");
        app.add_option("--vision", args->options.vision, "Vision preset images are checked against")
            ->capture_default_str();
        app.add_option("--audio", args->options.audio,
                       "Audio encoder preset (presets/audio) speech is planned and loaded with")
            ->capture_default_str();
        app.add_flag(
            "--audio-in-video", args->options.audio_in_video,
            "Write each video with its sound track, interleaved as the audio preset's "
            "model orders them (Qwen2.5-Omni's and Qwen3-Omni's use_audio_in_video); a video "
            "without one is a bad record");
        app.add_option("--chat-template", args->options.chat_template,
                       "Chat template every sample is rendered through (presets/chat name or a "
                       ".json path); recorded in the manifest, the loader renders with it")
            ->capture_default_str();
        app.add_option("--max-decode-pixels", args->options.max_decode_pixels,
                       "Images above this many pixels (width x height) are bad records; the "
                       "loader decodes with the same budget (Pillow's MAX_IMAGE_PIXELS)")
            ->capture_default_str();
        app.add_option(
               "--format", args->format,
               "Input format: auto, canonical, llava, mmc4, obelics, chat, or wds (every input "
               "a WebDataset tar; auto takes .tar, .tar.gz, .tgz as tars)")
            ->capture_default_str();
        app.add_option("--samples-per-shard", args->options.samples_per_shard,
                       "Input records per shard")
            ->capture_default_str();
        AddThreads(app, &args->options.threads);
        app.add_option("--on-error", args->on_error, "Bad records: skip (and report) or fail")
            ->capture_default_str();
        app.add_option("--part", args->options.part,
                       "Write only part PART of PARTS (shards numbered % PARTS == PART); join with "
                       "`mmpt merge`")
            ->capture_default_str();
        app.add_option("--parts", args->options.num_parts, "Number of parts (scale-out)")
            ->capture_default_str();
        AddJson(app, &args->json);
        return [args] { return Run(*args); };
      },
  };
}

}  // namespace mmpt::cli
