// Bindings of mmpt::load: the dataset as a sample source, the planner as a stream of plans by
// step, and the loader whose batches reach Python as NumPy arrays over mmpt's own memory
// (each array's base is a capsule holding the Batch, so no byte is copied).

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "bind_common.h"
#include "mmpt/comm/communicator.h"
#include "mmpt/cost/presets.h"
#include "mmpt/load/dataset_source.h"
#include "mmpt/load/exchange.h"
#include "mmpt/load/loader.h"
#include "mmpt/load/plan_stream.h"
#include "mmpt/store/planning_table.h"
#include "mmpt/store/vision_preset.h"

namespace mmpt::python {
namespace {

// Run `fn` (returning a Result) with the GIL released; errors are raised by the caller after
// the GIL is back (raising needs it).
template <typename Fn>
auto WithoutGil(Fn&& fn) -> decltype(fn()) {
  py::gil_scoped_release release;
  return fn();
}

// A NumPy array viewing `data` (shape in elements), kept alive by `owner`.
template <typename T>
py::array View(const std::vector<T>& data, std::vector<py::ssize_t> shape,
               const py::capsule& owner) {
  if (data.empty()) return py::array(py::dtype::of<T>(), shape);
  return py::array(py::dtype::of<T>(), shape, {}, data.data(), owner);
}

py::dict BatchToDict(std::shared_ptr<load::Batch> batch) {
  const load::Batch& b = *batch;
  py::capsule owner(new std::shared_ptr<load::Batch>(std::move(batch)), [](void* p) {
    delete static_cast<std::shared_ptr<load::Batch>*>(p);
  });
  const auto t = static_cast<py::ssize_t>(b.tokens.size());
  py::dict d;
  d["tokens"] = View(b.tokens, {t}, owner);
  d["labels"] = View(b.labels, {t}, owner);
  d["loss_mask"] = View(b.loss_mask, {t}, owner);
  if (b.position_rows == 1) {
    d["position_ids"] = View(b.position_ids, {t}, owner);
  } else {
    d["position_ids"] = View(b.position_ids, {static_cast<py::ssize_t>(b.position_rows), t}, owner);
  }
  d["cu_seqlens"] = View(b.cu_seqlens, {static_cast<py::ssize_t>(b.cu_seqlens.size())}, owner);
  d["cu_seqlens_padded"] =
      View(b.cu_seqlens_padded, {static_cast<py::ssize_t>(b.cu_seqlens_padded.size())}, owner);
  d["max_seqlen"] = b.max_seqlen;
  d["pixel_values"] = View(b.pixel_values,
                           {static_cast<py::ssize_t>(b.num_patches()),
                            static_cast<py::ssize_t>(b.patch_dim)},
                           owner);
  d["image_grid_thw"] =
      View(b.image_grid_thw, {static_cast<py::ssize_t>(b.image_grid_thw.size() / 3), 3}, owner);
  d["encoded_images"] =
      View(b.encoded_images, {static_cast<py::ssize_t>(b.encoded_images.size())}, owner);
  d["image_rows"] = View(b.image_rows, {static_cast<py::ssize_t>(b.image_rows.size())}, owner);
  d["image_encoder"] =
      View(b.image_encoder, {static_cast<py::ssize_t>(b.image_encoder.size())}, owner);
  // RouteSegment is six int32 fields with no padding: a [segments, 6] view.
  static_assert(sizeof(load::RouteSegment) == 6 * sizeof(int32_t));
  if (b.routes.empty()) {
    d["routes"] = py::array(py::dtype::of<int32_t>(), {py::ssize_t{0}, py::ssize_t{6}});
  } else {
    d["routes"] = py::array(py::dtype::of<int32_t>(),
                            {static_cast<py::ssize_t>(b.routes.size()), py::ssize_t{6}}, {},
                            reinterpret_cast<const int32_t*>(b.routes.data()), owner);
  }
  d["sample_source"] =
      View(b.sample_source, {static_cast<py::ssize_t>(b.sample_source.size())}, owner);
  d["sample_index"] =
      View(b.sample_index, {static_cast<py::ssize_t>(b.sample_index.size())}, owner);
  py::list dropped;
  for (const load::DroppedSample& s : b.dropped) {
    py::dict item;
    item["source"] = s.source;
    item["index"] = s.index;
    item["pack"] = s.pack;
    item["reason"] = s.reason;
    dropped.append(item);
  }
  d["dropped"] = dropped;
  d["step"] = b.step;
  d["micro_step"] = b.micro_step;
  d["dp_rank"] = b.dp_rank;
  d["cp_rank"] = b.cp_rank;
  d["cp_size"] = b.cp_size;
  d["plan_hash"] = b.plan_hash;
  d["plan_dropped"] = b.plan_dropped;
  return d;
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

  py::class_<load::Loader>(m, "Loader", "The prefetching loader of one (DP rank, CP rank).")
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
             return ValueOrThrow(WithoutGil([&] {
               return load::Loader::Start(source, plans->AsFunction(), options,
                                          {start_step, start_micro_step});
             }));
           }),
           py::arg("source"), py::arg("plans"), py::arg("dp_rank") = 0, py::arg("cp_rank") = 0,
           py::arg("num_threads") = 2, py::arg("prefetch") = 4,
           py::arg("max_bytes") = uint64_t{4} << 30, py::arg("on_bad_sample") = "fail",
           py::arg("mrope") = true, py::arg("start_step") = 0,
           py::arg("start_micro_step") = 0, py::arg("end_step") = py::none())
      .def("next",
           [](load::Loader& loader) -> py::object {
             std::shared_ptr<load::Batch> batch =
                 ValueOrThrow(WithoutGil([&] { return loader.Next(); }));
             if (batch == nullptr) return py::none();
             return BatchToDict(std::move(batch));
           },
           "The next batch as a dict of NumPy arrays (None after end_step). Blocks without the "
           "GIL.")
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
          [](load::Exchanger& x, const std::string& message) {
            x.source()->Fail(Status::IOError("{}", message));
          },
          py::arg("message"), "Make the source's waiting and later reads fail with `message`.")
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
