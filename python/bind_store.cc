// Bindings of mmpt::store: read a prepared dataset back (planning metadata, token ids without
// copies, media bytes).

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bind_common.h"
#include "mmpt/cost/presets.h"
#include "mmpt/store/dataset.h"
#include "mmpt/store/planning_table.h"
#include "mmpt/store/sample.h"

namespace mmpt::python {
namespace {

void CheckIndex(const store::Dataset& dataset, uint64_t i) {
  if (i >= dataset.num_samples()) {
    ThrowStatus(Status::OutOfRange("sample {} of a dataset of {} samples ({})", i,
                                   dataset.num_samples(), dataset.dir()));
  }
}

}  // namespace

void BindStore(py::module_& m) {
  // The files of a dataset beside its shards (manifest, shard table, planning table).
  m.attr("DATASET_FILES") = std::vector<std::string>{store::kManifestName, store::kShardTableName,
                                                     store::kPlanningTableName};
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
      .def_property_readonly(
          "shard_paths",
          [](const store::Dataset& d) {
            std::vector<std::string> stems;
            for (size_t s = 0; s < d.num_shards(); ++s) stems.emplace_back(d.shards().stem(s));
            return stems;
          },
          "Each shard's path without its suffixes, relative to the dataset, in manifest order.")
      .def(
          "sample_meta",
          [](const store::Dataset& d, uint64_t i) {
            CheckIndex(d, i);
            const store::StoredSample stored = ValueOrThrow(d.Sample(i));
            py::list images, items;
            for (const store::MediaMeta& media : stored.media()) {
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
            out["text_tokens"] = stored.meta().text_tokens;
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
            const store::StoredSample stored = ValueOrThrow(d.Sample(i));
            std::string_view line = ValueOrThrow(stored.Line());
            return py::bytes(line.data(), line.size());
          },
          py::arg("i"), "Sample `i`'s canonical JSON line as stored (without its newline).")
      .def(
          "tokens",
          [](const store::Dataset& d, uint64_t i) {
            CheckIndex(d, i);
            auto stored = std::make_unique<store::StoredSample>(ValueOrThrow(d.Sample(i)));
            std::span<const int32_t> ids = ValueOrThrow(stored->Tokens());
            // A read-only view into the mapped .tok file; its base holds the shard open.
            py::capsule holder(stored.release(),
                               [](void* held) { delete static_cast<store::StoredSample*>(held); });
            py::array_t<int32_t> view({static_cast<py::ssize_t>(ids.size())},
                                      {static_cast<py::ssize_t>(sizeof(int32_t))}, ids.data(),
                                      holder);
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
            const store::StoredSample stored = ValueOrThrow(d.Sample(i));
            std::span<const std::byte> bytes = ValueOrThrow(stored.Media(k));
            return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
          },
          py::arg("i"), py::arg("k"),
          "Bytes of media item `k` of sample `i` (empty for a metadata-only item).");
}

}  // namespace mmpt::python
