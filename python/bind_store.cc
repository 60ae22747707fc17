// Bindings of mmpt::store: `prepare` a dataset, and read one back (planning metadata, token
// ids without copies, media bytes).

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bind_common.h"
#include "mmpt/cost/presets.h"
#include "mmpt/ingest/merge.h"
#include "mmpt/ingest/prepare.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/sample.h"

namespace mmpt::python {
namespace {

void CheckIndex(const store::Dataset& dataset, uint64_t i) {
  if (i >= dataset.num_samples()) {
    ThrowStatus(Status::OutOfRange("sample {} of a dataset of {} samples ({})", i,
                                   dataset.num_samples(), dataset.dir()));
  }
}

void BindDatasetReader(py::module_& m) {
  py::class_<store::Dataset, std::shared_ptr<store::Dataset>>(
      m, "DatasetReader",
      "Random access to a prepared dataset through mmap (thread-safe, read-only): planning "
      "metadata, token ids, media bytes, as stored, by index. Why two: mmpt.Dataset renders the "
      "samples a plan names into batches, for the loader.")
      .def(py::init([](const std::string& dir) {
             Result<store::Dataset> dataset = [&] {
               py::gil_scoped_release release;
               return store::Dataset::Open(dir);
             }();
             return std::make_shared<store::Dataset>(ValueOrThrow(std::move(dataset)));
           }),
           py::arg("dir"),
           "Open the prepared dataset in `dir`. Raises NotFoundError, CorruptError, IOError.")
      .def_property_readonly("num_samples", &store::Dataset::num_samples)
      .def_property_readonly("sources", &store::Dataset::sources)
      .def(
          "sample_meta",
          [](const store::Dataset& d, uint64_t i) {
            CheckIndex(d, i);
            py::list images, items;
            for (const store::MediaMeta& media : d.media_meta(i)) {
              images.append(py::make_tuple(media.width, media.height));
              py::dict item;
              item["kind"] = store::MediaKindName(media.kind);
              item["width"] = media.width;
              item["height"] = media.height;
              item["duration_ms"] = media.duration_ms;
              item["frames"] = media.frames;
              item["fps_milli"] = media.fps_milli;
              item["sample_rate_hz"] = media.sample_rate_hz;
              items.append(item);
            }
            py::dict out;
            out["source"] = d.sources()[d.source_of(i)];
            out["text_tokens"] = d.meta(i).text_tokens;
            out["images"] = images;
            out["media"] = items;
            return out;
          },
          py::arg("i"),
          "Planning facts of sample `i`: source, text_tokens, images [(width, height)] (every "
          "media item's), and media [{kind, width, height, duration_ms, frames, fps_milli, "
          "sample_rate_hz}] (.meta's fields).")
      .def(
          "line",
          [](const store::Dataset& d, uint64_t i) {
            CheckIndex(d, i);
            std::string_view line = ValueOrThrow(d.Line(i));
            return py::bytes(line.data(), line.size());
          },
          py::arg("i"), "Sample `i`'s canonical JSON line as stored (without its newline).")
      .def(
          "tokens",
          [](py::object self, uint64_t i) {
            const auto& d = self.cast<const store::Dataset&>();
            CheckIndex(d, i);
            std::span<const int32_t> ids = ValueOrThrow(d.Tokens(i));
            // A read-only view into the mapped .tok file; `self` keeps the mapping alive.
            py::array_t<int32_t> view({static_cast<py::ssize_t>(ids.size())},
                                      {static_cast<py::ssize_t>(sizeof(int32_t))}, ids.data(),
                                      self);
            py::detail::array_proxy(view.ptr())->flags &=
                ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
            return view;
          },
          py::arg("i"),
          "Token ids of sample `i`'s text segments, as a read-only NumPy view (no copy).")
      .def(
          "media",
          [](const store::Dataset& d, uint64_t i, size_t k) {
            CheckIndex(d, i);
            std::span<const std::byte> bytes = ValueOrThrow(d.Media(i, k));
            return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
          },
          py::arg("i"), py::arg("k"),
          "Bytes of media item `k` of sample `i` (empty for a metadata-only item).");
}

}  // namespace

void BindStore(py::module_& m) {
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
        options.on_error = ValueOrThrow(ingest::ParseErrorPolicy(on_error));
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
      py::arg("on_error") = std::string(ingest::ErrorPolicyName(defaults.on_error)),
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
  BindDatasetReader(m);
}

}  // namespace mmpt::python
