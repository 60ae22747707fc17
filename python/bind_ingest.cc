// Bindings of mmpt::ingest: `prepare` a dataset from raw records (as `mmpt prepare`), and
// `merge` independently prepared parts (as `mmpt merge`).

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bind_common.h"
#include "mmpt/ingest/merge.h"
#include "mmpt/ingest/prepare.h"

namespace mmpt::python {

void BindIngest(py::module_& m) {
  const ingest::PrepareOptions defaults;  // prepare's defaults, as `mmpt prepare` has them
  m.def(
      "prepare",
      [](const std::vector<py::object>& inputs, const std::string& out_dir,
         const std::string& vision, const std::string& audio, uint64_t samples_per_shard,
         size_t threads, const std::string& on_error,
         const std::optional<std::string>& tokenizer_path, const std::string& chat_template,
         uint64_t max_decode_pixels, bool audio_in_video) {
        ingest::PrepareOptions options;
        options.audio_in_video = audio_in_video;
        options.chat_template = chat_template;
        options.max_decode_pixels = max_decode_pixels;
        // Each input as `mmpt prepare`'s argument: (source, path) is "source=path".
        std::vector<std::string> args;
        for (const py::object& input : inputs) {
          if (py::isinstance<py::str>(input)) {
            args.push_back(input.cast<std::string>());
          } else {
            const auto [source, path] = input.cast<std::pair<std::string, std::string>>();
            args.push_back(source + "=" + path);
          }
        }
        options.inputs = ValueOrThrow(ingest::ExpandInputs(args));
        options.out_dir = out_dir;
        options.vision = vision;
        options.audio = audio;
        options.samples_per_shard = samples_per_shard;
        options.threads = threads;
        options.on_error = ValueOrThrow(ParseErrorPolicy(on_error));
        options.progress = false;
        Result<ingest::PrepareReport> report = [&]() -> Result<ingest::PrepareReport> {
          py::gil_scoped_release release;
          MMPT_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tokenizer,
                                ingest::UseTokenizer(tokenizer_path.value_or(""), options));
          return ingest::Prepare(options);
        }();
        ingest::PrepareReport r = ValueOrThrow(std::move(report));
        py::dict out;
        out["records"] = r.records;
        out["samples"] = r.samples;
        out["skipped"] = r.skipped;
        out["shards"] = r.shards;
        out["media"] = r.media;
        out["text_tokens"] = r.text_tokens;
        out["examples"] = r.examples;
        out["summary"] = r.Summary();
        return out;
      },
      py::arg("inputs"), py::arg("out_dir"), py::kw_only(), py::arg("vision") = defaults.vision,
      py::arg("audio") = defaults.audio, py::arg("samples_per_shard") = defaults.samples_per_shard,
      py::arg("threads") = defaults.threads,
      py::arg("on_error") = std::string(ErrorPolicyName(defaults.on_error)),
      py::arg("tokenizer") = py::none(), py::arg("chat_template") = defaults.chat_template,
      py::arg("max_decode_pixels") = defaults.max_decode_pixels,
      py::arg("audio_in_video") = defaults.audio_in_video,
      "Prepare a dataset in `out_dir` from JSONL `inputs` (LLaVA, mmc4, "
      "OBELICS, chat or canonical records; images by path, or metadata-only {width, height}) "
      "or WebDataset tars (.tar, .tar.gz, .tgz), each a (source, path) pair or a string as "
      "`mmpt prepare` takes it (PATH, NAME=PATH, a brace range 'shard-{0000..0999}.tar', a "
      "directory of tars; a shard set is one source), "
      "as `mmpt prepare` does (`vision`, `audio`, `chat_template`, `threads`, `tokenizer` and "
      "`audio_in_video` as its --vision, --audio, --chat-template, --threads, --tokenizer and "
      "--audio-in-video). "
      "Returns the "
      "report (records, samples, skipped, ..., summary). "
      "Raises InvalidArgumentError, NotFoundError, IOError, or the first bad record's error "
      "with on_error='fail'.");

  m.def(
      "merge",
      [](const std::string& out_dir, const std::vector<std::string>& parts) {
        store::Manifest merged = ValueOrThrow(ingest::MergeDatasets(out_dir, parts));
        return merged.num_samples();
      },
      py::arg("out_dir"), py::arg("parts"),
      "Join independently prepared datasets `parts` into `out_dir`/mmpt.json without copying "
      "shards, as `mmpt merge` does; returns the merged sample count.");
}

}  // namespace mmpt::python
