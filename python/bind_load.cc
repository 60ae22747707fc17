// Bindings of mmpt::load: the dataset as a sample source, the planner as a stream of plans by
// step, the loader whose batches reach Python as NumPy arrays over mmpt's own memory (each
// array's base keeps the Batch, a shared-memory message or a received buffer alive, so no byte
// is copied), and the pieces of one load per replica.

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bind_common.h"
#include "mmpt/comm/communicator.h"
#include "mmpt/comm/shm_ring.h"
#include "mmpt/cost/presets.h"
#include "mmpt/load/batch_wire.h"
#include "mmpt/load/dataset_source.h"
#include "mmpt/load/exchange.h"
#include "mmpt/load/loader.h"
#include "mmpt/load/plan_stream.h"
#include "mmpt/load/replica.h"
#include "mmpt/store/planning_table.h"
#include "mmpt/store/dataset_preset.h"

namespace mmpt::python {
namespace {

// Run `fn` (returning a Result) with the GIL released; errors are raised by the caller after
// the GIL is back (raising needs it).
template <typename Fn>
auto WithoutGil(Fn&& fn) -> decltype(fn()) {
  py::gil_scoped_release release;
  return fn();
}

// Destroys a Loader without the GIL: its destructor joins the worker threads, and a worker may
// need the GIL to finish (FFmpeg's log callback takes it once PyAV has installed its own, as
// importing `av` does), so joining while holding it deadlocked.
struct DeleteWithoutGil {
  void operator()(load::Loader* loader) const {
    if (PyGILState_Check()) {
      py::gil_scoped_release release;
      delete loader;
    } else {
      delete loader;
    }
  }
};
using LoaderHolder = std::unique_ptr<load::Loader, DeleteWithoutGil>;

// A NumPy array of `data` (shape in elements) kept alive by `owner`, or a fresh empty one.
template <typename T>
py::array View(std::span<const T> data, std::vector<py::ssize_t> shape, py::handle owner) {
  if (data.empty()) return py::array(py::dtype::of<T>(), shape);
  return py::array(py::dtype::of<T>(), shape, {}, data.data(), owner);
}
py::array View1(auto data, py::handle owner) {
  return View(data, {static_cast<py::ssize_t>(data.size())}, owner);
}

// The fields of `v` within `fields` as a dict of NumPy arrays over `owner`'s memory (the
// batch, a shared-memory message or a received buffer): no byte is copied.
py::dict ViewToDict(const load::BatchView& v, uint32_t fields, py::handle owner) {
  fields &= v.fields;
  const load::BatchScalars& scalars = v.scalars;
  auto has = [&](uint32_t field) { return (fields & field) == field; };
  const auto t = static_cast<py::ssize_t>(scalars.num_tokens);
  py::dict d;
  if (has(load::kTokenField)) d["tokens"] = View1(v.tokens, owner);
  if (has(load::kLabelField)) d["labels"] = View1(v.labels, owner);
  if (has(load::kLossMaskField)) d["loss_mask"] = View1(v.loss_mask, owner);
  if (has(load::kPositionField)) {
    d["position_ids"] = scalars.position_rows == 1
                            ? View(v.position_ids, {t}, owner)
                            : View(v.position_ids, {static_cast<py::ssize_t>(scalars.position_rows), t},
                                   owner);
  }
  d["num_tokens"] = scalars.num_tokens;
  d["cu_seqlens"] = View1(v.cu_seqlens, owner);
  d["cu_seqlens_padded"] = View1(v.cu_seqlens_padded, owner);
  d["max_seqlen"] = scalars.max_seqlen;
  if (has(load::kPixelField)) {
    d["pixel_values"] = View(v.pixel_values,
                             {static_cast<py::ssize_t>(v.num_patches()),
                              static_cast<py::ssize_t>(scalars.patch_dim)},
                             owner);
    d["image_grid_thw"] =
        View(v.image_grid_thw, {static_cast<py::ssize_t>(v.image_grid_thw.size() / 3), 3}, owner);
    d["encoded_images"] = View1(v.encoded_images, owner);
    d["pixel_values_videos"] =
        View(v.pixel_values_videos,
             {static_cast<py::ssize_t>(scalars.patch_dim == 0
                                           ? 0
                                           : v.pixel_values_videos.size() / scalars.patch_dim),
              static_cast<py::ssize_t>(scalars.patch_dim)},
             owner);
    d["video_grid_thw"] =
        View(v.video_grid_thw, {static_cast<py::ssize_t>(v.video_grid_thw.size() / 3), 3}, owner);
    d["second_per_grid_ts"] = View1(v.second_per_grid_ts, owner);
    d["encoded_videos"] = View1(v.encoded_videos, owner);
    const auto clips = static_cast<py::ssize_t>(v.encoded_audios.size());
    const auto frames = static_cast<py::ssize_t>(scalars.feature_frames);
    d["input_features"] = View(
        v.input_features, {clips, static_cast<py::ssize_t>(scalars.mel_bins), frames}, owner);
    d["feature_attention_mask"] = View(v.feature_attention_mask, {clips, frames}, owner);
    d["encoded_audios"] = View1(v.encoded_audios, owner);
  }
  if (has(load::kRoutingField)) {
    d["image_rows"] = View1(v.image_rows, owner);
    d["image_encoder"] = View1(v.image_encoder, owner);
    // RouteSegment is six int32 fields with no padding: a [segments, 6] view.
    static_assert(sizeof(load::RouteSegment) == 6 * sizeof(int32_t));
    auto segments = [&](std::span<const load::RouteSegment> routes) {
      return View(std::span<const int32_t>(reinterpret_cast<const int32_t*>(routes.data()),
                                           routes.size() * 6),
                  {static_cast<py::ssize_t>(routes.size()), py::ssize_t{6}}, owner);
    };
    d["routes"] = segments(v.routes);
    d["audio_rows"] = View1(v.audio_rows, owner);
    d["audio_encoder"] = View1(v.audio_encoder, owner);
    d["audio_routes"] = segments(v.audio_routes);
  }
  d["sample_source"] = View1(v.sample_source, owner);
  d["sample_index"] = View1(v.sample_index, owner);
  py::list dropped;
  for (const load::DroppedSample& s : v.dropped) {
    py::dict item;
    item["source"] = s.source;
    item["index"] = s.index;
    item["pack"] = s.pack;
    item["reason"] = s.reason;
    dropped.append(item);
  }
  d["dropped"] = dropped;
  d["step"] = scalars.step;
  d["micro_step"] = scalars.micro_step;
  d["dp_rank"] = scalars.dp_rank;
  d["cp_rank"] = scalars.cp_rank;
  d["cp_size"] = scalars.cp_size;
  d["plan_hash"] = scalars.plan_hash;
  d["plan_dropped"] = scalars.plan_dropped;
  return d;
}

// An owner object (a capsule) keeping `value` alive while any array over it lives.
template <typename T>
py::capsule Keep(std::shared_ptr<T> value) {
  return py::capsule(new std::shared_ptr<T>(std::move(value)),
                     [](void* p) { delete static_cast<std::shared_ptr<T>*>(p); });
}

// A uint8 NumPy array's bytes; InvalidArgument unless it is one contiguous array.
std::span<const std::byte> BytesOf(const py::array& array) {
  if (array.dtype().itemsize() != 1 || !(array.flags() & py::array::c_style)) {
    ThrowIfError(Status::InvalidArgument("expected a contiguous uint8 array"));
  }
  return {static_cast<const std::byte*>(array.data()), static_cast<size_t>(array.nbytes())};
}

// Every field of a layout, by its CLI and keyword name.
py::dict LayoutDict(const plan::Layout& layout) {
  py::dict d;
  d["seq_len"] = layout.seq_len;
  d["dp"] = layout.dp;
  d["ga"] = layout.ga;
  d["mbs"] = layout.mbs;
  d["cp"] = layout.cp;
  d["tp"] = layout.tp;
  d["pp"] = layout.pp;
  d["ep"] = layout.ep;
  d["sync"] = std::string(plan::SyncModelName(layout.sync));
  return d;
}

py::dict PlanSummary(const plan::StepPlan& plan) {
  py::dict d = LayoutDict(plan.layout);
  d["step"] = plan.step;
  d["hash"] = plan.Hash();
  // Per DP rank: the (source, index) of every sample it loads this step, in order.
  py::list ranks;
  for (uint32_t r = 0; r < plan.layout.dp; ++r) {
    py::list samples;
    for (const plan::PlannedPack& pack : plan.RankPacks(r)) {
      for (const plan::PlannedSequence& seq : plan.Sequences(pack)) {
        samples.append(py::make_tuple(seq.source, seq.index));
      }
    }
    ranks.append(samples);
  }
  d["rank_samples"] = ranks;
  // The samples the plan drew and dropped (over-long, or too many images), in draw order.
  py::list dropped;
  for (const plan::SampleId& sample : plan.dropped) {
    dropped.append(py::make_tuple(sample.source, sample.index));
  }
  d["dropped"] = dropped;
  d["step_seconds"] = plan.estimate.step_seconds;
  d["lower_bound_seconds"] = plan.estimate.lower_bound_seconds;
  return d;
}

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// The pieces of one load per replica (load/replica.h): batches as handles to encode or view,
// the rank grid, and the shared-memory ring.
void BindReplica(py::module_& m) {
  m.attr("ALL_FIELDS") = static_cast<uint32_t>(load::kAllFields);
  m.def(
      "stage_fields",
      [](const std::string& role) -> uint32_t {
        for (load::StageRole r : {load::StageRole::kOnly, load::StageRole::kFirst,
                                  load::StageRole::kMiddle, load::StageRole::kLast}) {
          if (load::StageRoleName(r) == role) return load::FieldsOf(r);
        }
        ThrowIfError(Status::InvalidArgument(
            "unknown stage role '{}' (expected only, first, middle or last)", role));
        return 0;
      },
      py::arg("role"), "The batch fields a pipeline stage's role needs (a bit mask).");
  py::class_<load::Batch, std::shared_ptr<load::Batch>>(
      m, "Batch", "One loaded micro-step, owned by mmpt; as_dict() views it without copies.")
      .def(
          "as_dict",
          [](std::shared_ptr<load::Batch> batch, uint32_t fields) {
            const load::BatchView view = load::ViewOf(*batch);
            return ViewToDict(view, fields, Keep(std::move(batch)));
          },
          py::arg("fields") = static_cast<uint32_t>(load::kAllFields))
      .def(
          "encode",
          [](const load::Batch& batch, uint32_t fields) {
            const load::BatchView view = load::ViewOf(batch);
            py::array_t<uint8_t> out(static_cast<py::ssize_t>(load::EncodedSize(view, fields)));
            load::EncodeBatch(view, fields,
                              {reinterpret_cast<std::byte*>(out.mutable_data()),
                               static_cast<size_t>(out.size())});
            return out;
          },
          py::arg("fields"), "The fields as bytes (a uint8 array) for decode_batch elsewhere.");
  m.def(
      "decode_batch",
      [](const py::array& buffer, uint32_t fields) {
        const load::BatchView view = ValueOrThrow(load::DecodeBatch(BytesOf(buffer)));
        return ViewToDict(view, fields, buffer);
      },
      py::arg("buffer"), py::arg("fields") = static_cast<uint32_t>(load::kAllFields),
      "View an encoded batch (Batch.encode) as a dict of arrays over `buffer`'s memory.");

  py::class_<load::RankGrid>(m, "RankGrid", "A job's ranks as a (DP, CP, TP, PP) grid.")
      .def(py::init([](uint32_t dp, uint32_t cp, uint32_t tp, uint32_t pp,
                       const std::string& order) {
             plan::Layout layout;
             layout.dp = dp;
             layout.cp = cp;
             layout.tp = tp;
             layout.pp = pp;
             return ValueOrThrow(
                 load::RankGrid::Create(layout, ValueOrThrow(load::ParseRankOrder(order))));
           }),
           py::arg("dp"), py::arg("cp"), py::arg("tp"), py::arg("pp"),
           py::arg("order") = load::RankOrderName(load::kMegatronOrder))
      .def_property_readonly("world_size", &load::RankGrid::world_size)
      .def("place",
           [](const load::RankGrid& grid, uint32_t rank) {
             const load::RankPlace p = ValueOrThrow(grid.Place(rank));
             py::dict d;
             d["rank"] = p.rank;
             d["dp"] = p.dp;
             d["cp"] = p.cp;
             d["tp"] = p.tp;
             d["pp"] = p.pp;
             d["role"] = std::string(load::StageRoleName(p.role));
             return d;
           })
      .def("replica", &load::RankGrid::Replica, py::arg("dp"), py::arg("cp"),
           "The ranks sharing one load, the loading rank first.");

  py::class_<comm::ShmRingWriter>(m, "ShmRingWriter",
                                  "The loading rank's end of a node's shared-memory ring.")
      .def(py::init([](const std::string& name, uint32_t writer_rank,
                       std::vector<uint32_t> reader_ranks, uint32_t slots, uint64_t capacity,
                       double timeout) {
             comm::ShmRingOptions options;
             options.name = name;
             options.writer_rank = writer_rank;
             options.reader_ranks = std::move(reader_ranks);
             options.slots = slots;
             options.capacity_bytes = capacity;
             options.timeout = Millis(timeout);
             return ValueOrThrow(comm::ShmRingWriter::Create(options));
           }),
           py::arg("name"), py::arg("writer_rank"), py::arg("reader_ranks"), py::arg("slots"),
           py::arg("capacity"), py::arg("timeout"))
      .def(
          "publish",
          [](comm::ShmRingWriter& ring, const load::Batch& batch, uint32_t fields) {
            const load::BatchView view = load::ViewOf(batch);
            ThrowIfError(WithoutGil([&] {
              return ring.Write(load::EncodedSize(view, fields), [&](std::span<std::byte> out) {
                load::EncodeBatch(view, fields, out);
              });
            }));
          },
          py::arg("batch"), py::arg("fields"))
      .def("publish_bytes",
           [](comm::ShmRingWriter& ring, const py::array& buffer) {
             const std::span<const std::byte> bytes = BytesOf(buffer);
             ThrowIfError(WithoutGil([&] {
               return ring.Write(bytes.size(), [&](std::span<std::byte> out) {
                 std::memcpy(out.data(), bytes.data(), bytes.size());
               });
             }));
           })
      .def("close", &comm::ShmRingWriter::Close)
      .def("fail", [](comm::ShmRingWriter& ring, int code, const std::string& message) {
        ring.Fail(Status(static_cast<StatusCode>(code), message));
      });

  py::class_<comm::ShmRingReader>(m, "ShmRingReader", "A reader of a node's shared-memory ring.")
      .def(py::init([](const std::string& name, uint32_t reader, double timeout) {
             return ValueOrThrow(
                 WithoutGil([&] { return comm::ShmRingReader::Open(name, reader, Millis(timeout)); }));
           }),
           py::arg("name"), py::arg("reader"), py::arg("timeout"))
      .def(
          "next",
          [](comm::ShmRingReader& ring, uint32_t fields) -> py::object {
            std::shared_ptr<comm::ShmMessage> message =
                ValueOrThrow(WithoutGil([&] { return ring.Next(); }));
            if (message == nullptr) return py::none();
            const load::BatchView view = ValueOrThrow(load::DecodeBatch(message->bytes()));
            return ViewToDict(view, fields, Keep(std::move(message)));
          },
          py::arg("fields"),
          "The next batch, viewed in shared memory (None at the end). The message is released "
          "when the last array over it is gone.");
}

}  // namespace

void BindExchange(py::module_& m);

void BindLoad(py::module_& m) {
  m.def(
      "check_plan_agreement",
      [](const std::vector<uint64_t>& hashes, uint64_t step) {
        ThrowIfError(comm::CheckHashesAgree(hashes, step));
      },
      py::arg("hashes"), py::arg("step"),
      "Check that every rank's plan hash of `step` (gathered in rank order, e.g. with "
      "torch.distributed.all_gather) is the same; raises mmpt.InternalError naming every rank "
      "that differs from rank 0.");
  py::class_<load::SampleSource, std::shared_ptr<load::SampleSource>>(
      m, "SampleSource", "What a Loader reads planned samples from.");
  py::class_<load::DatasetSource, load::SampleSource, std::shared_ptr<load::DatasetSource>>(
      m, "DatasetSource",
      "A prepared dataset as the loader reads it: stored token ids, media bytes from the zips.")
      .def(py::init([](const std::string& path, const std::string& loss,
                       const std::string& tokenizer, bool verify_crc) {
             load::DatasetSourceOptions options;
             options.loss = ValueOrThrow(load::ParseLossMode(loss));
             options.tokenizer = tokenizer;
             options.verify_crc = verify_crc;
             return ValueOrThrow(
                 WithoutGil([&] { return load::DatasetSource::Open(path, options); }));
           }),
           py::arg("path"), py::arg("loss") = "assistant", py::arg("tokenizer") = "",
           py::arg("verify_crc") = true)
      .def_property_readonly("num_samples",
                             [](const load::DatasetSource& s) { return s.dataset().num_samples(); })
      .def_property_readonly("sources",
                             [](const load::DatasetSource& s) { return s.dataset().sources(); })
      .def_property_readonly("path", [](const load::DatasetSource& s) { return s.dataset().dir(); })
      .def("global_index", [](const load::DatasetSource& s, uint32_t source, uint64_t index) {
        return ValueOrThrow(s.dataset().GlobalIndex(source, index));
      })
      .def("reads", [](const load::DatasetSource& s) {
        const load::SourceReads r = s.reads();
        py::dict d;
        d["samples"] = r.samples;
        d["images"] = r.images;
        d["bytes"] = r.bytes;
        return d;
      });

  py::class_<load::PlanStream, std::shared_ptr<load::PlanStream>>(
      m, "PlanStream", "The planner of a prepared dataset, serving plans by step.")
      .def(py::init([](const std::string& dataset_dir, uint32_t seq_len, uint32_t dp, uint32_t ga,
                       uint32_t mbs, uint32_t cp, uint32_t tp, uint32_t pp, uint32_t ep,
                       const std::string& sync, uint64_t seed, const std::string& vision,
                       const std::string& llm, const std::string& hardware,
                       const std::string& vision_policy, const std::string& overlong,
                       bool allow_repeat, const std::string& planner,
                       uint32_t vanilla_buffer) {
             load::PlanStreamConfig config;
             if (planner != "mmpt" && planner != "vanilla") {
               ThrowIfError(Status::InvalidArgument(
                   "unknown planner '{}' (expected mmpt or vanilla)", planner));
             }
             config.vanilla = planner == "vanilla";
             config.planner.vanilla_buffer = vanilla_buffer;
             plan::Layout& layout = config.planner.layout;
             layout.seq_len = seq_len;
             layout.dp = dp;
             layout.ga = ga;
             layout.mbs = mbs;
             layout.cp = cp;
             layout.tp = tp;
             layout.pp = pp;
             layout.ep = ep;
             layout.sync = ValueOrThrow(plan::ParseSyncModel(sync));
             config.planner.seed = seed;
             config.planner.cp_vision = ValueOrThrow(cp::ParseVisionPolicy(vision_policy));
             config.planner.overlong = ValueOrThrow(pack::ParseOverlongPolicy(overlong));
             config.planner.allow_repeat = allow_repeat;
             config.llm = llm;
             config.hardware = hardware;
             return ValueOrThrow(WithoutGil([&]() -> Result<std::shared_ptr<load::PlanStream>> {
               MMPT_ASSIGN_OR_RETURN(config.vision,
                                     store::DatasetVisionPreset(dataset_dir, vision));
               MMPT_ASSIGN_OR_RETURN(config.audio, store::DatasetAudioPreset(dataset_dir, ""));
               MMPT_ASSIGN_OR_RETURN(cost::SampleTable table,
                                     store::ReadPlanningTable(dataset_dir));
               return load::PlanStream::Create(std::move(table), config);
             }));
           }),
           // Defaults: plan::Layout's and cost::Defaults, the table the CLI uses too; the vision
           // preset is the dataset's (its manifest) unless given.
           py::arg("dataset"), py::arg("seq_len") = plan::Layout{}.seq_len,
           py::arg("dp") = plan::Layout{}.dp, py::arg("ga") = plan::Layout{}.ga,
           py::arg("mbs") = plan::Layout{}.mbs, py::arg("cp") = plan::Layout{}.cp,
           py::arg("tp") = plan::Layout{}.tp, py::arg("pp") = plan::Layout{}.pp,
           py::arg("ep") = plan::Layout{}.ep,
           py::arg("sync") = std::string(plan::SyncModelName(plan::Layout{}.sync)),
           py::arg("seed") = plan::PlannerConfig{}.seed, py::arg("vision") = "",
           py::arg("llm") = std::string(cost::Defaults::kLlm),
           py::arg("hardware") = std::string(cost::Defaults::kHardware),
           py::arg("vision_policy") = "cost",
           py::arg("overlong") =
               std::string(pack::OverlongPolicyName(plan::PlannerConfig{}.overlong)),
           py::arg("allow_repeat") = plan::PlannerConfig{}.allow_repeat,
           py::arg("planner") = "mmpt",
           py::arg("vanilla_buffer") = plan::PlannerConfig{}.vanilla_buffer)
      .def_property_readonly("planner",
                             [](const load::PlanStream& s) {
                               return std::string(s.vanilla() ? "vanilla" : "mmpt");
                             })
      .def_property_readonly("layout",
                             [](const load::PlanStream& s) { return LayoutDict(s.layout()); })
      .def("plan",
           [](load::PlanStream& s, uint64_t step) {
             return PlanSummary(*ValueOrThrow(WithoutGil([&] { return s.Plan(step); })));
           },
           py::arg("step"),
           "Summary of the plan of `step`: hash, layout, each rank's samples, and the samples "
           "it dropped.")
      .def("state_at",
           [](load::PlanStream& s, uint64_t step, uint32_t micro_step) {
             return py::bytes(
                 ValueOrThrow(WithoutGil([&] { return s.StateAt(step, micro_step); })));
           },
           py::arg("step"), py::arg("micro_step") = 0,
           "The planner's state where a loader stands before `micro_step` of `step` (bytes).")
      .def("restore",
           [](load::PlanStream& s, const py::bytes& state) {
             plan::Planner::ResumePoint resume = ValueOrThrow(s.Restore(std::string(state)));
             py::dict d;
             d["step"] = resume.step;
             d["micro_step"] = resume.micro_step;
             d["changed"] = resume.changed;
             return d;
           },
           py::arg("state"),
           "Resume from state_at() bytes: where the next batch comes from (step, micro_step) "
           "and the settings that changed (elastic resume).");

  BindReplica(m);

  py::class_<load::Loader, LoaderHolder>(m, "Loader",
                                         "The prefetching loader of one (DP rank, CP rank).")
      .def(py::init([](std::shared_ptr<load::SampleSource> source,
                       std::shared_ptr<load::PlanStream> plans, uint32_t dp_rank,
                       uint32_t cp_rank, uint32_t num_threads, uint32_t prefetch,
                       uint64_t max_bytes, const std::string& on_bad_sample, bool mrope,
                       uint64_t start_step,
                       uint32_t start_micro_step, std::optional<uint64_t> end_step) {
             load::LoaderOptions options;
             options.dp_rank = dp_rank;
             options.cp_rank = cp_rank;
             options.num_threads = num_threads;
             options.prefetch_micro_steps = prefetch;
             options.max_bytes_in_flight = max_bytes;
             options.on_bad_sample = ValueOrThrow(load::ParseBadSamplePolicy(on_bad_sample));
             options.assemble.mrope = mrope;
             if (end_step) options.end_step = *end_step;
             return LoaderHolder(ValueOrThrow(WithoutGil([&] {
                                   return load::Loader::Start(source, plans->AsFunction(),
                                                              options,
                                                              {start_step, start_micro_step});
                                 })).release());
           }),
           py::arg("source"), py::arg("plans"), py::arg("dp_rank") = 0, py::arg("cp_rank") = 0,
           py::arg("num_threads") = 2, py::arg("prefetch") = 4,
           py::arg("max_bytes") = uint64_t{4} << 30, py::arg("on_bad_sample") = "fail",
           py::arg("mrope") = true, py::arg("start_step") = 0,
           py::arg("start_micro_step") = 0, py::arg("end_step") = py::none())
      .def("next",
           [](load::Loader& loader) -> std::shared_ptr<load::Batch> {
             return ValueOrThrow(WithoutGil([&] { return loader.Next(); }));
           },
           "The next batch (None after end_step). Blocks without the GIL.")
      .def_property_readonly("position",
                             [](const load::Loader& loader) {
                               load::LoaderPosition p = loader.position();
                               return py::make_tuple(p.step, p.micro_step);
                             })
      .def_property_readonly("micro_steps_per_step", &load::Loader::micro_steps_per_step)
      .def("stats", [](const load::Loader& loader) {
        load::LoaderStats s = loader.stats();
        py::dict d;
        d["batches"] = s.batches;
        d["samples"] = s.samples;
        d["images"] = s.images;
        d["dropped"] = s.dropped;
        d["bytes_in_flight"] = s.bytes_in_flight;
        d["peak_bytes_in_flight"] = s.peak_bytes_in_flight;
        d["peak_micro_steps_in_flight"] = s.peak_micro_steps_in_flight;
        return d;
      });
  BindExchange(m);
}

// The streaming exchange for node-local data (mmpt.Exchange, python/mmpt/exchange.py): the
// placement, and one peer's native side, whose pack/unpack run without the GIL around the
// all-to-all-v that Python issues.
void BindExchange(py::module_& m) {
  py::class_<load::Placement>(m, "Placement", "Which exchange peer holds each shard.")
      .def_static(
          "round_robin",
          [](const std::string& dataset, uint32_t peers) {
            store::Manifest manifest = ValueOrThrow(store::ReadManifest(dataset));
            return ValueOrThrow(load::Placement::RoundRobin(manifest, peers));
          },
          py::arg("dataset"), py::arg("peers"),
          "Shard i of the dataset's manifest on peer i mod peers.")
      .def_static(
          "read",
          [](const std::string& path, const std::string& dataset) {
            store::Manifest manifest = ValueOrThrow(store::ReadManifest(dataset));
            return ValueOrThrow(load::Placement::Read(path, manifest));
          },
          py::arg("path"), py::arg("dataset"),
          "Read a placement file ({\"peers\": P, \"shards\": {path: peer}}) for the dataset.")
      .def(
          "write",
          [](const load::Placement& p, const std::string& path, const std::string& dataset) {
            store::Manifest manifest = ValueOrThrow(store::ReadManifest(dataset));
            ThrowIfError(p.Write(path, manifest));
          },
          py::arg("path"), py::arg("dataset"))
      .def_property_readonly("peers", &load::Placement::peers)
      .def_property_readonly("num_shards", &load::Placement::num_shards)
      .def(
          "holder",
          [](const load::Placement& p, size_t shard) {
            if (shard >= p.num_shards()) {
              ThrowIfError(Status::OutOfRange("placement: shard {} of {}", shard, p.num_shards()));
            }
            return p.holder(shard);
          },
          py::arg("shard"))
      .def("shards_of", &load::Placement::ShardsOf, py::arg("peer"));

  py::class_<load::ExchangeSource, load::SampleSource, std::shared_ptr<load::ExchangeSource>>(
      m, "ExchangeSource", "The samples a trainer received, served to its Loader.")
      .def("release", &load::ExchangeSource::Release, py::arg("step"),
           "Forget the steps before `step`.")
      .def("reset", &load::ExchangeSource::Reset, "Forget every step and any failure.");

  py::class_<load::Exchanger>(m, "Exchanger", "One peer's native side of the exchange.")
      .def(py::init([](std::shared_ptr<load::DatasetSource> local,
                       std::shared_ptr<load::PlanStream> plans, const load::Placement& placement,
                       uint32_t peer, std::vector<uint32_t> trainer_peers, uint32_t num_threads,
                       double timeout_seconds) {
             load::ExchangerOptions options;
             options.peer = peer;
             options.trainer_peer = std::move(trainer_peers);
             options.num_threads = num_threads;
             options.timeout_seconds = timeout_seconds;
             return ValueOrThrow(
                 load::Exchanger::Create(local, plans->AsFunction(), placement, options));
           }),
           py::arg("local"), py::arg("plans"), py::arg("placement"), py::arg("peer"),
           py::arg("trainer_peers"), py::arg("num_threads") = 2,
           py::arg("timeout_seconds") = load::ExchangerOptions{}.timeout_seconds)
      // The arrays view the exchanger's reused buffers (their base keeps it alive): pack's
      // until the next pack, receive's until unpack.
      .def(
          "pack",
          [](py::object self, uint64_t step) {
            load::Exchanger& x = self.cast<load::Exchanger&>();
            load::Exchanger::Outgoing out =
                ValueOrThrow(WithoutGil([&] { return x.Pack(step); }));
            py::array bytes(py::dtype::of<uint8_t>(),
                            {static_cast<py::ssize_t>(out.buffer.size())}, {},
                            reinterpret_cast<const uint8_t*>(out.buffer.data()), self);
            return py::make_tuple(bytes, out.bytes);
          },
          py::arg("step"),
          "Render what this peer sends at `step`: (uint8 array, bytes per destination peer).")
      .def(
          "receive",
          [](py::object self, uint64_t step, const std::vector<uint64_t>& bytes) {
            std::span<std::byte> into = self.cast<load::Exchanger&>().Receive(step, bytes);
            return py::array(py::dtype::of<uint8_t>(), {static_cast<py::ssize_t>(into.size())},
                             {}, reinterpret_cast<uint8_t*>(into.data()), self);
          },
          py::arg("step"), py::arg("bytes"),
          "A uint8 array for what arrives at `step` (bytes[q] from peer q, in peer order).")
      .def(
          "unpack",
          [](load::Exchanger& x, uint64_t step) {
            ThrowIfError(WithoutGil([&] { return x.Unpack(step); }));
          },
          py::arg("step"), "Hand what receive(step)'s array holds to the source.")
      .def(
          "fail",
          [](load::Exchanger& x, int code, const std::string& message) {
            x.source()->Fail(Status(static_cast<StatusCode>(code), message));
          },
          py::arg("code"), py::arg("message"),
          "Make the source's waiting and later reads fail with this StatusCode and message.")
      .def(
          "lists",
          [](load::Exchanger& x, uint64_t step) {
            load::ExchangeLists lists = ValueOrThrow(WithoutGil([&] { return x.Lists(step); }));
            std::shared_ptr<const plan::StepPlan> plan =
                ValueOrThrow(WithoutGil([&] { return x.plans()(step); }));
            auto named = [&](const std::vector<std::vector<uint32_t>>& by_peer) {
              py::list out;
              for (const std::vector<uint32_t>& items : by_peer) {
                py::list samples;
                for (uint32_t k : items) {
                  const plan::PlannedSequence& seq = plan->sequences[k];
                  samples.append(py::make_tuple(seq.source, seq.index));
                }
                out.append(samples);
              }
              return out;
            };
            py::dict d;
            d["send"] = named(lists.send);
            d["receive"] = named(lists.receive);
            return d;
          },
          py::arg("step"),
          "This peer's lists at `step`: send[q] and receive[q], (source, index) in plan order.")
      .def_property_readonly("source", [](const load::Exchanger& x) { return x.source(); })
      .def_property_readonly("peer", &load::Exchanger::peer)
      .def("stats", [](const load::Exchanger& x) {
        load::ExchangeStats s = x.stats();
        py::dict d;
        d["bytes_sent"] = s.bytes_sent;
        d["bytes_received"] = s.bytes_received;
        d["samples_sent"] = s.samples_sent;
        d["samples_received"] = s.samples_received;
        d["steps"] = s.steps;
        return d;
      });
}

}  // namespace mmpt::python
