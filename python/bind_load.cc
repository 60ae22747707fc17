// Bindings of mmpt::load: the dataset as a sample source, the planner as a stream of plans by
// step, and the loader whose batches reach Python as NumPy arrays over mmpt's own memory
// (bind_load.h); one load per replica is bind_replica.cc, the exchange bind_exchange.cc.

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "bind_load.h"
#include "mmpt/comm/communicator.h"
#include "mmpt/cost/presets.h"
#include "mmpt/load/dataset_source.h"
#include "mmpt/load/loader.h"
#include "mmpt/load/plan_stream.h"

namespace mmpt::python {

py::dict ViewToDict(const load::BatchView& v, uint32_t fields, py::handle owner) {
  fields &= v.fields;
  const load::BatchScalars& scalars = v.scalars;
  using Dims = std::vector<py::ssize_t>;
  auto dims = [&](load::ArrayShape shape, size_t n) -> Dims {
    const auto size = static_cast<py::ssize_t>(n);
    const auto t = static_cast<py::ssize_t>(scalars.num_tokens);
    const auto clips = static_cast<py::ssize_t>(v.encoded_audios.size());
    const auto frames = static_cast<py::ssize_t>(scalars.feature_frames);
    const auto patch = static_cast<py::ssize_t>(scalars.patch_dim);
    switch (shape) {
      case load::ArrayShape::kPositions:
        return scalars.position_rows == 1
                   ? Dims{t}
                   : Dims{static_cast<py::ssize_t>(scalars.position_rows), t};
      case load::ArrayShape::kPatches: return {patch == 0 ? 0 : size / patch, patch};
      case load::ArrayShape::kGrids: return {size / 3, 3};
      case load::ArrayShape::kFeatures:
        return {clips, static_cast<py::ssize_t>(scalars.mel_bins), frames};
      case load::ArrayShape::kFrames: return {clips, frames};
      case load::ArrayShape::kRoutes: return {size, 6};
      case load::ArrayShape::kTokens:
      case load::ArrayShape::kFlat: break;
    }
    return {size};
  };
  py::dict d;
  load::ForEachBatchArray([&](const auto& array) {
    if ((fields & array.field) != array.field) return;
    const auto& data = v.*array.viewed;
    const py::str key(array.name.data(), array.name.size());
    if constexpr (std::is_same_v<typename std::decay_t<decltype(data)>::element_type,
                                 const load::RouteSegment>) {
      // RouteSegment is six int32 fields with no padding: a [segments, 6] view.
      static_assert(sizeof(load::RouteSegment) == 6 * sizeof(int32_t));
      d[key] = View(
          std::span<const int32_t>(reinterpret_cast<const int32_t*>(data.data()), data.size() * 6),
          dims(array.shape, data.size()), owner);
    } else {
      d[key] = View(data, dims(array.shape, data.size()), owner);
    }
  });
  d["num_tokens"] = scalars.num_tokens;
  d["max_seqlen"] = scalars.max_seqlen;
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
  d["cp"] = scalars.cp;
  d["plan_hash"] = scalars.plan_hash;
  d["plan_dropped"] = scalars.plan_dropped;
  return d;
}

std::span<const std::byte> BytesOf(const py::array& array) {
  if (array.dtype().itemsize() != 1 || !(array.flags() & py::array::c_style)) {
    ThrowIfError(Status::InvalidArgument("expected a contiguous uint8 array"));
  }
  return {static_cast<const std::byte*>(array.data()), static_cast<size_t>(array.nbytes())};
}

namespace {

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

void BindDatasetSource(py::module_& m) {
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
      .def("global_index",
           [](const load::DatasetSource& s, uint32_t source, uint64_t index) {
             return ValueOrThrow(s.dataset().GlobalIndex(source, index));
           })
      .def("reads", [](const load::DatasetSource& s) {
        const load::SourceReads r = s.reads();
        py::dict d;
        d["samples"] = r.samples;
        d["media"] = r.media;
        d["bytes"] = r.bytes;
        return d;
      });
}

void BindPlanStream(py::module_& m) {
  py::class_<load::PlanStream, std::shared_ptr<load::PlanStream>>(
      m, "PlanStream", "The planner of a prepared dataset, serving plans by step.")
      .def(
          py::init([](const std::string& dataset_dir, uint32_t seq_len, uint32_t dp, uint32_t ga,
                      uint32_t mbs, uint32_t cp, uint32_t tp, uint32_t pp, uint32_t ep,
                      const std::string& sync, uint64_t seed, const std::string& vision,
                      const std::string& audio, const std::string& llm, const std::string& hardware,
                      const std::string& vision_policy, const std::string& overlong,
                      bool allow_repeat, const std::string& planner, uint32_t vanilla_buffer) {
            load::PlanStreamConfig config;
            if (planner != "mmpt" && planner != "packed" && planner != "vanilla") {
              ThrowIfError(Status::InvalidArgument(
                  "unknown planner '{}' (expected mmpt, packed or vanilla)", planner));
            }
            config.vanilla = planner == "vanilla";
            config.reorder = planner != "packed";
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
            config.vision = vision;  // empty: the dataset's (PlanStream::Open)
            config.audio = audio;
            return ValueOrThrow(
                WithoutGil([&] { return load::PlanStream::Open(dataset_dir, config); }));
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
          py::arg("audio") = "", py::arg("llm") = std::string(cost::Defaults::kLlm),
          py::arg("hardware") = std::string(cost::Defaults::kHardware),
          py::arg("vision_policy") =
              std::string(cp::VisionPolicyName(plan::PlannerConfig{}.cp_vision)),
          py::arg("overlong") =
              std::string(pack::OverlongPolicyName(plan::PlannerConfig{}.overlong)),
          py::arg("allow_repeat") = plan::PlannerConfig{}.allow_repeat, py::arg("planner") = "mmpt",
          py::arg("vanilla_buffer") = plan::PlannerConfig{}.vanilla_buffer)
      .def_property_readonly(
          "planner", [](const load::PlanStream& s) { return std::string(s.planner_name()); })
      .def_property_readonly("layout",
                             [](const load::PlanStream& s) { return LayoutDict(s.layout()); })
      .def(
          "plan",
          [](load::PlanStream& s, uint64_t step) {
            return PlanSummary(*ValueOrThrow(WithoutGil([&] { return s.Plan(step); })));
          },
          py::arg("step"),
          "Summary of the plan of `step`: hash, layout, each rank's samples, and the samples "
          "it dropped.")
      .def(
          "state_at",
          [](load::PlanStream& s, uint64_t step, uint32_t micro_step) {
            return py::bytes(ValueOrThrow(WithoutGil([&] { return s.StateAt(step, micro_step); })));
          },
          py::arg("step"), py::arg("micro_step") = 0,
          "The planner's state where a loader stands before `micro_step` of `step` (bytes).")
      .def(
          "restore",
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
}

void BindLoader(py::module_& m) {
  py::class_<load::Loader, LoaderHolder>(m, "Loader",
                                         "The prefetching loader of one (DP rank, CP rank).")
      .def(py::init([](std::shared_ptr<load::SampleSource> source,
                       std::shared_ptr<load::PlanStream> plans, uint32_t dp_rank, uint32_t cp_rank,
                       uint32_t threads, uint32_t prefetch_micro_steps, uint64_t max_bytes,
                       const std::string& on_error, bool mrope, uint64_t start_step,
                       uint32_t start_micro_step, std::optional<uint64_t> end_step) {
             load::LoaderOptions options;
             options.dp_rank = dp_rank;
             options.cp_rank = cp_rank;
             options.threads = threads;
             options.prefetch_micro_steps = prefetch_micro_steps;
             options.max_bytes = max_bytes;
             options.on_error = ValueOrThrow(ParseErrorPolicy(on_error));
             options.assemble.mrope = mrope;
             if (end_step) options.end_step = *end_step;
             return LoaderHolder(ValueOrThrow(WithoutGil([&] {
                                   return load::Loader::Start(source, plans->AsFunction(), options,
                                                              {start_step, start_micro_step});
                                 })).release());
           }),
           py::arg("source"), py::arg("plans"), py::arg("dp_rank") = 0, py::arg("cp_rank") = 0,
           py::arg("threads") = load::LoaderOptions{}.threads,
           py::arg("prefetch_micro_steps") = load::LoaderOptions{}.prefetch_micro_steps,
           py::arg("max_bytes") = load::LoaderOptions{}.max_bytes,
           py::arg("on_error") = std::string(ErrorPolicyName(load::LoaderOptions{}.on_error)),
           py::arg("mrope") = true, py::arg("start_step") = 0, py::arg("start_micro_step") = 0,
           py::arg("end_step") = py::none())
      .def(
          "next",
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
}

}  // namespace

void BindLoad(py::module_& m) {
  // What mmpt.Loader takes when an argument is left out: load::LoaderOptions' own defaults.
  const load::LoaderOptions loader_defaults;
  m.attr("LOADER_DEFAULTS") =
      py::dict(py::arg("threads") = loader_defaults.threads,
               py::arg("prefetch_micro_steps") = loader_defaults.prefetch_micro_steps,
               py::arg("max_bytes") = loader_defaults.max_bytes,
               py::arg("on_error") = ErrorPolicyName(loader_defaults.on_error));
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
  BindDatasetSource(m);
  BindPlanStream(m);
  BindLoader(m);
}

}  // namespace mmpt::python
