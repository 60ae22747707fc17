// Bindings of the streaming exchange for node-local data (mmpt.Exchange,
// python/mmpt/exchange.py).

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "bind_load.h"
#include "mmpt/dist/exchange.h"
#include "mmpt/dist/exchange_lists.h"
#include "mmpt/load/plan_stream.h"
#include "mmpt/store/manifest.h"

namespace mmpt::python {

// The streaming exchange for node-local data (mmpt.Exchange, python/mmpt/exchange.py): the
// placement, and one peer's native side, whose pack/unpack run without the GIL around the
// all-to-all-v that Python issues.
namespace {

void BindPlacement(py::module_& m) {
  py::class_<dist::Placement>(m, "Placement", "Which exchange peer holds each shard.")
      .def_static(
          "round_robin",
          [](const std::string& dataset, uint32_t peers) {
            store::Manifest manifest = ValueOrThrow(store::ReadManifest(dataset));
            return ValueOrThrow(dist::Placement::RoundRobin(manifest.shards.size(), peers));
          },
          py::arg("dataset"), py::arg("peers"),
          "Shard i of the dataset's manifest on peer i mod peers.")
      .def_static(
          "read",
          [](const std::string& path, const std::string& dataset) {
            store::Manifest manifest = ValueOrThrow(store::ReadManifest(dataset));
            return ValueOrThrow(dist::Placement::Read(path, manifest));
          },
          py::arg("path"), py::arg("dataset"),
          "Read a placement file ({\"peers\": P, \"shards\": {path: peer}}) for the dataset.")
      .def(
          "write",
          [](const dist::Placement& p, const std::string& path, const std::string& dataset) {
            store::Manifest manifest = ValueOrThrow(store::ReadManifest(dataset));
            ThrowIfError(p.Write(path, manifest));
          },
          py::arg("path"), py::arg("dataset"))
      .def_property_readonly("peers", &dist::Placement::peers)
      .def_property_readonly("num_shards", &dist::Placement::num_shards)
      .def(
          "holder",
          [](const dist::Placement& p, size_t shard) {
            if (shard >= p.num_shards()) {
              ThrowIfError(Status::OutOfRange("placement: shard {} of {}", shard, p.num_shards()));
            }
            return p.holder(shard);
          },
          py::arg("shard"))
      .def("shards_of", &dist::Placement::ShardsOf, py::arg("peer"))
      .def(
          "sample_holder",
          [](const dist::Placement& p, const store::Dataset& dataset, uint32_t source,
             uint64_t index) {
            const size_t shard = ValueOrThrow(dist::ShardsOf(dataset)(source, index));
            if (shard >= p.num_shards()) {
              ThrowIfError(Status::OutOfRange("placement: shard {} of {}", shard, p.num_shards()));
            }
            return p.holder(shard);
          },
          py::arg("dataset"), py::arg("source"), py::arg("index"),
          "The peer holding sample `index` of source `source` of `dataset` (a DatasetReader), as "
          "the exchange finds it (a batch's sample_source and sample_index).");
}

void BindExchanger(py::module_& m) {
  py::class_<dist::Exchanger>(m, "Exchanger", "One peer's native side of the exchange.")
      .def(py::init([](std::shared_ptr<load::DatasetSource> local,
                       std::shared_ptr<load::PlanStream> plans, const dist::Placement& placement,
                       uint32_t peer, std::vector<uint32_t> trainer_peers, uint32_t threads,
                       double timeout_seconds) {
             dist::ExchangerOptions options;
             options.peer = peer;
             options.trainer_peer = std::move(trainer_peers);
             options.threads = threads;
             options.timeout_seconds = timeout_seconds;
             return ValueOrThrow(
                 dist::Exchanger::Create(local, plans->AsFunction(), placement, options));
           }),
           py::arg("local"), py::arg("plans"), py::arg("placement"), py::arg("peer"),
           py::arg("trainer_peers"), py::arg("threads") = dist::ExchangerOptions{}.threads,
           py::arg("timeout_seconds") = dist::ExchangerOptions{}.timeout_seconds)
      // The arrays view the exchanger's reused buffers (their base keeps it alive): pack's
      // until the next pack, receive's until unpack.
      .def(
          "pack",
          [](py::object self, uint64_t step) {
            dist::Exchanger& x = self.cast<dist::Exchanger&>();
            dist::Exchanger::Outgoing out = ValueOrThrow(WithoutGil([&] { return x.Pack(step); }));
            py::array bytes(py::dtype::of<uint8_t>(), {static_cast<py::ssize_t>(out.buffer.size())},
                            {}, reinterpret_cast<const uint8_t*>(out.buffer.data()), self);
            return py::make_tuple(bytes, out.bytes);
          },
          py::arg("step"),
          "Render what this peer sends at `step`: (uint8 array, bytes per destination peer).")
      .def(
          "receive",
          [](py::object self, uint64_t step, const std::vector<uint64_t>& bytes) {
            std::span<std::byte> into = self.cast<dist::Exchanger&>().Receive(step, bytes);
            return py::array(py::dtype::of<uint8_t>(), {static_cast<py::ssize_t>(into.size())}, {},
                             reinterpret_cast<uint8_t*>(into.data()), self);
          },
          py::arg("step"), py::arg("bytes"),
          "A uint8 array for what arrives at `step` (bytes[q] from peer q, in peer order).")
      .def(
          "unpack",
          [](dist::Exchanger& x, uint64_t step) {
            ThrowIfError(WithoutGil([&] { return x.Unpack(step); }));
          },
          py::arg("step"), "Hand what receive(step)'s array holds to the source.")
      .def(
          "fail",
          [](dist::Exchanger& x, int code, const std::string& message) {
            x.source()->received().Fail(Status(static_cast<StatusCode>(code), message));
          },
          py::arg("code"), py::arg("message"),
          "Make the source's waiting and later reads fail with this StatusCode and message.")
      .def(
          "lists",
          [](dist::Exchanger& x, uint64_t step) {
            dist::ExchangeLists lists = ValueOrThrow(WithoutGil([&] { return x.Lists(step); }));
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
      .def_property_readonly("source", [](const dist::Exchanger& x) { return x.source(); })
      .def_property_readonly("peer", &dist::Exchanger::peer)
      .def("stats", [](const dist::Exchanger& x) {
        dist::ExchangeStats s = x.stats();
        py::dict d;
        d["bytes_sent"] = s.bytes_sent;
        d["bytes_received"] = s.bytes_received;
        d["samples_sent"] = s.samples_sent;
        d["samples_received"] = s.samples_received;
        d["steps"] = s.steps;
        return d;
      });
}

}  // namespace

void BindExchange(py::module_& m) {
  BindPlacement(m);

  py::class_<dist::ExchangeSource, load::SampleSource, std::shared_ptr<dist::ExchangeSource>>(
      m, "ExchangeSource", "The samples a trainer received, served to its Loader.")
      .def(
          "release", [](dist::ExchangeSource& s, uint64_t step) { s.received().Release(step); },
          py::arg("step"), "Forget the steps before `step`.")
      .def(
          "reset", [](dist::ExchangeSource& s) { s.received().Reset(); },
          "Forget every step and any failure.");
  BindExchanger(m);
}

}  // namespace mmpt::python
