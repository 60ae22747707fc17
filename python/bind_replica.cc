// Bindings of one load per replica (dist/replica.h): batches as handles to encode or view, the
// rank grid, and the shared-memory ring.

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "bind_load.h"
#include "mmpt/comm/shm_ring.h"
#include "mmpt/dist/replica.h"

namespace mmpt::python {

// The pieces of one load per replica (dist/replica.h): batches as handles to encode or view,
// the rank grid, and the shared-memory ring.
namespace {

void BindBatch(py::module_& m) {
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
            py::array_t<uint8_t> out(static_cast<py::ssize_t>(dist::EncodedSize(view, fields)));
            dist::EncodeBatch(view, fields,
                              {reinterpret_cast<std::byte*>(out.mutable_data()),
                               static_cast<size_t>(out.size())});
            return out;
          },
          py::arg("fields"), "The fields as bytes (a uint8 array) for decode_batch elsewhere.");
}

void BindRankGrid(py::module_& m) {
  py::class_<dist::RankGrid>(m, "RankGrid", "A job's ranks as a (DP, CP, TP, PP) grid.")
      .def(py::init(
               [](uint32_t dp, uint32_t cp, uint32_t tp, uint32_t pp, const std::string& order) {
                 plan::Layout layout;
                 layout.dp = dp;
                 layout.cp = cp;
                 layout.tp = tp;
                 layout.pp = pp;
                 return ValueOrThrow(
                     dist::RankGrid::Create(layout, ValueOrThrow(dist::ParseRankOrder(order))));
               }),
           py::arg("dp"), py::arg("cp"), py::arg("tp"), py::arg("pp"),
           py::arg("order") = dist::RankOrderName(dist::kMegatronOrder))
      .def_property_readonly("world_size", &dist::RankGrid::world_size)
      .def("place",
           [](const dist::RankGrid& grid, uint32_t rank) {
             const dist::RankPlace p = ValueOrThrow(grid.Place(rank));
             py::dict d;
             d["rank"] = p.rank;
             d["dp"] = p.dp;
             d["cp"] = p.cp;
             d["tp"] = p.tp;
             d["pp"] = p.pp;
             d["role"] = std::string(dist::StageRoleName(p.role));
             return d;
           })
      .def("replica", &dist::RankGrid::Replica, py::arg("dp"), py::arg("cp"),
           "The ranks sharing one load, the loading rank first.")
      .def("loading_ranks", &dist::RankGrid::LoadingRanks,
           "The loading rank of every (DP rank d, CP rank c), at d * cp + c.")
      .def(
          "share",
          [](const dist::RankGrid& grid, const std::vector<std::string>& nodes, uint32_t rank) {
            const dist::ReplicaShare share =
                ValueOrThrow(dist::PlanReplicaShare(grid, nodes, rank));
            py::list groups;
            for (const dist::BroadcastGroup& g : share.groups) {
              groups.append(py::make_tuple(g.ranks, g.fields));
            }
            py::dict d;
            d["groups"] = groups;
            d["loading_rank"] = share.loading_rank;
            d["sends"] = share.sends;
            d["source"] = share.source < 0 ? py::object(py::none()) : py::int_(share.source);
            d["ring_writer"] = share.ring_writer;
            d["ring_readers"] = share.ring_readers;
            d["ring_fields"] = share.ring_fields;
            return d;
          },
          py::arg("nodes"), py::arg("rank"),
          "How `rank` shares its replica's load, from every rank's node label "
          "(dist::PlanReplicaShare): groups [(ranks, fields)] every rank creates in this order, "
          "loading_rank, sends (indices of the groups it broadcasts to), source (the group it "
          "receives in, or None), ring_writer, ring_readers, ring_fields.");
  m.attr("DEFAULT_RANK_ORDER") = dist::RankOrderName(dist::kMegatronOrder);
}

void BindShmRingWriter(py::module_& m) {
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
              return ring.Write(dist::EncodedSize(view, fields), [&](std::span<std::byte> out) {
                dist::EncodeBatch(view, fields, out);
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
}

void BindShmRingReader(py::module_& m) {
  py::class_<comm::ShmRingReader>(m, "ShmRingReader", "A reader of a node's shared-memory ring.")
      .def(py::init([](const std::string& name, uint32_t reader, double timeout) {
             return ValueOrThrow(WithoutGil(
                 [&] { return comm::ShmRingReader::Open(name, reader, Millis(timeout)); }));
           }),
           py::arg("name"), py::arg("reader"), py::arg("timeout"))
      .def(
          "next",
          [](comm::ShmRingReader& ring, uint32_t fields) -> py::object {
            std::shared_ptr<comm::ShmMessage> message =
                ValueOrThrow(WithoutGil([&] { return ring.Next(); }));
            if (message == nullptr) return py::none();
            const load::BatchView view = ValueOrThrow(dist::DecodeBatch(message->bytes()));
            return ViewToDict(view, fields, Keep(std::move(message)));
          },
          py::arg("fields"),
          "The next batch, viewed in shared memory (None at the end). The message is released "
          "when the last array over it is gone.");
}

}  // namespace

void BindReplica(py::module_& m) {
  m.attr("ALL_FIELDS") = static_cast<uint32_t>(load::kAllFields);
  m.def(
      "stage_fields",
      [](const std::string& role) -> uint32_t {
        for (dist::StageRole r : {dist::StageRole::kOnly, dist::StageRole::kFirst,
                                  dist::StageRole::kMiddle, dist::StageRole::kLast}) {
          if (dist::StageRoleName(r) == role) return dist::FieldsOf(r);
        }
        ThrowIfError(Status::InvalidArgument(
            "unknown stage role '{}' (expected only, first, middle or last)", role));
        return 0;
      },
      py::arg("role"), "The batch fields a pipeline stage's role needs (a bit mask).");
  BindBatch(m);
  m.def(
      "decode_batch",
      [](const py::array& buffer, uint32_t fields) {
        const load::BatchView view = ValueOrThrow(dist::DecodeBatch(BytesOf(buffer)));
        return ViewToDict(view, fields, buffer);
      },
      py::arg("buffer"), py::arg("fields") = static_cast<uint32_t>(load::kAllFields),
      "View an encoded batch (Batch.encode) as a dict of arrays over `buffer`'s memory.");
  BindRankGrid(m);
  BindShmRingWriter(m);
  BindShmRingReader(m);
}

}  // namespace mmpt::python
