// Bindings of mmpt::cp: the THD split of a packed sequence over a context-parallel group, and
// vision-DP assignment with its routing maps (returned as mmpt.Routing).

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "bind_common.h"
#include "mmpt/cp/image_layout.h"
#include "mmpt/cp/thd_split.h"
#include "mmpt/cp/vision_assign.h"
#include "mmpt/plan/planner.h"

namespace mmpt::python {
namespace {

py::array_t<uint32_t> ToArray(const std::vector<uint32_t>& values) {
  return py::array_t<uint32_t>(static_cast<py::ssize_t>(values.size()), values.data());
}

cp::ThdSplit Split(const std::vector<uint32_t>& seq_lengths, uint32_t group_size, uint32_t tp,
                   bool sequence_parallel) {
  cp::ThdSplitOptions options;
  options.cp = group_size;
  options.tp = tp;
  options.sequence_parallel = sequence_parallel;
  return ValueOrThrow(cp::SplitThd(seq_lengths, options));
}

// (token_start, token_count, vision_cost) tuples → CpImage, token_start in the unpadded pack.
std::vector<cp::CpImage> ToImages(const std::vector<std::tuple<uint32_t, uint32_t, double>>& in) {
  std::vector<cp::CpImage> images;
  images.reserve(in.size());
  for (const auto& [token_start, token_count, vision_cost] : in) {
    cp::CpImage image;
    image.token_start = token_start;
    image.token_count = token_count;
    image.vision_cost = vision_cost;
    images.push_back(image);
  }
  return images;
}

// Tuples (item, row_begin, row_count, local_offset, source_rank) per consumer.
using SegmentTuples =
    std::vector<std::vector<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>>>;

// An assignment from a routing's lists, validated (cp::ValidateRouting) for `group_size` ranks.
cp::EncoderAssignment Assignment(uint32_t group_size, const std::vector<uint32_t>& item_rows,
                                 const std::vector<std::vector<uint32_t>>& encoded,
                                 const SegmentTuples& consumed) {
  if (encoded.size() != group_size || consumed.size() != group_size) {
    ThrowStatus(Status::InvalidArgument("routing: {} encoded lists and {} consumed lists for cp {}",
                                        encoded.size(), consumed.size(), group_size));
  }
  cp::EncoderAssignment assignment;
  assignment.encoded = encoded;
  for (const auto& segments : consumed) {
    std::vector<cp::RowSegment>& out = assignment.consumed.emplace_back();
    for (const auto& [item, row_begin, row_count, local_offset, source] : segments) {
      out.push_back({item, row_begin, row_count, local_offset, source});
    }
  }
  ThrowIfError(cp::ValidateRouting(assignment, item_rows));
  return assignment;
}

// The mmpt.Routing of a valid assignment (its fields as they are; nothing is checked again).
py::object ToRouting(const cp::EncoderAssignment& assignment,
                     const std::vector<uint32_t>& item_rows, std::string_view policy) {
  py::module_ routing = py::module_::import("mmpt.routing");
  py::object segment_class = routing.attr("RowSegment");
  py::list encoded, consumed;
  for (size_t r = 0; r < assignment.consumed.size(); ++r) {
    encoded.append(py::tuple(py::cast(assignment.encoded[r])));
    py::list segments;
    for (const cp::RowSegment& s : assignment.consumed[r]) {
      segments.append(
          segment_class(s.image, s.row_begin, s.row_count, s.local_offset, s.source_rank));
    }
    consumed.append(py::tuple(segments));
  }
  return routing.attr("Routing")(assignment.consumed.size(), py::tuple(py::cast(item_rows)),
                                 py::tuple(encoded), py::tuple(consumed), std::string(policy));
}

// The routing a loaded Batch's flat arrays describe (load::Batch): per item its rows and first
// encoder, and segments (consumer, item, row_begin, row_count, local_offset, source) in any
// order. A rank encodes the items named its encoder and those it is the source of a segment of
// (under the naive policy an item straddling ranks is encoded by each).
cp::EncoderAssignment FromArrays(
    uint32_t group_size, const std::vector<uint32_t>& item_rows,
    const std::vector<uint32_t>& item_encoder,
    const std::vector<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>>&
        routes) {
  std::vector<std::set<uint32_t>> encoded(group_size);
  SegmentTuples consumed(group_size);
  for (size_t item = 0; item < item_encoder.size(); ++item) {
    if (item_encoder[item] >= group_size) {
      ThrowStatus(
          Status::InvalidArgument("routing: item {}'s encoder {} is not in a CP group of {}", item,
                                  item_encoder[item], group_size));
    }
    encoded[item_encoder[item]].insert(static_cast<uint32_t>(item));
  }
  for (const auto& [consumer, item, row_begin, row_count, local_offset, source] : routes) {
    if (consumer >= group_size || source >= group_size) {
      ThrowStatus(Status::InvalidArgument(
          "routing: a segment of item {} names consumer {} and source {} in a CP group of {}", item,
          consumer, source, group_size));
    }
    consumed[consumer].emplace_back(item, row_begin, row_count, local_offset, source);
    encoded[source].insert(item);
  }
  for (auto& segments : consumed) {
    std::sort(segments.begin(), segments.end(),
              [](const auto& a, const auto& b) { return std::get<3>(a) < std::get<3>(b); });
  }
  std::vector<std::vector<uint32_t>> lists;
  for (const auto& items : encoded) lists.emplace_back(items.begin(), items.end());
  return Assignment(group_size, item_rows, lists, consumed);
}

}  // namespace

void BindCp(py::module_& m) {
  py::class_<cp::ThdSplit>(m, "ThdSplit",
                           "A packed sequence split over a CP group as Transformer Engine's THD "
                           "context parallelism takes it (see src/mmpt/cp/thd_split.h).")
      .def_readonly("cp", &cp::ThdSplit::cp)
      .def_readonly("pad_multiple", &cp::ThdSplit::pad_multiple)
      .def_property_readonly("cu_seqlens",
                             [](const cp::ThdSplit& s) { return ToArray(s.cu_seqlens); })
      .def_property_readonly("cu_seqlens_padded",
                             [](const cp::ThdSplit& s) { return ToArray(s.cu_seqlens_padded); })
      .def_property_readonly("padded_tokens", &cp::ThdSplit::padded_tokens)
      .def(
          "token_indices",
          [](const cp::ThdSplit& s, uint32_t cp_rank) {
            if (cp_rank >= s.shards.size()) {
              ThrowStatus(Status::InvalidArgument("CP rank {} is not in a CP group of {}", cp_rank,
                                                  s.shards.size()));
            }
            return ToArray(s.shards[cp_rank].token_indices);
          },
          py::arg("cp_rank"),
          "Index into the padded pack of every token CP rank `cp_rank` holds, in its local order.")
      .def(
          "cu_seqlens_padded_local",
          [](const cp::ThdSplit& s, uint32_t cp_rank) {
            if (cp_rank >= s.shards.size()) {
              ThrowStatus(Status::InvalidArgument("CP rank {} is not in a CP group of {}", cp_rank,
                                                  s.shards.size()));
            }
            return ToArray(s.shards[cp_rank].cu_seqlens_padded_local);
          },
          py::arg("cp_rank"), "Local THD boundaries of the sub-sequences on CP rank `cp_rank`.");

  m.def(
      "partitioned_indices",
      [](const std::vector<uint32_t>& cu_seqlens_padded, uint32_t group_size, uint32_t cp_rank) {
        return ToArray(
            ValueOrThrow(cp::PartitionedIndices(cu_seqlens_padded, group_size, cp_rank)));
      },
      py::arg("cu_seqlens_padded"), py::arg("cp"), py::arg("cp_rank"),
      "The token indices, into the padded pack, that CP rank `cp_rank` of `cp` holds, from a "
      "pack's padded boundaries (a batch's `cu_seqlens_padded`), as Transformer Engine's "
      "thd_get_partitioned_indices gives them. Raises InvalidArgumentError for a boundary that is "
      "not a multiple of 2·cp.");

  m.def("split_thd", &Split, py::arg("seq_lengths"), py::arg("cp"), py::kw_only(),
        py::arg("tp") = 1, py::arg("sequence_parallel") = false,
        "Split a pack whose sub-sequences have `seq_lengths` real tokens over `cp` ranks: "
        "each padded to a multiple of 2·cp (2·tp·cp with sequence parallelism), cut into "
        "2·cp chunks, rank r keeping chunks r and 2·cp−1−r. Raises "
        "InvalidArgumentError or OutOfRangeError.");

  m.def(
      "assign_vision",
      [](const cp::ThdSplit& split,
         const std::vector<std::tuple<uint32_t, uint32_t, double>>& images,
         const std::string& policy) {
        cp::VisionPolicy parsed = ValueOrThrow(cp::ParseVisionPolicy(policy));
        std::vector<cp::CpImage> cp_images = ToImages(images);
        cp::EncoderAssignment assignment = ValueOrThrow(cp::AssignVision(split, cp_images, parsed));
        std::vector<uint32_t> rows;
        for (const cp::CpImage& image : cp_images) rows.push_back(image.token_count);
        return ToRouting(assignment, rows, cp::VisionPolicyName(assignment.policy));
      },
      py::arg("split"), py::arg("images"),
      py::arg("policy") = std::string(cp::VisionPolicyName(plan::PlannerConfig{}.cp_vision)),
      "Assign a pack's images to the CP ranks of `split` under `policy` (\"naive\", \"count\", "
      "\"cost\") and route their embedding rows; `images` are (token_start, token_count, "
      "vision_cost) with token_start in the unpadded pack. Returns mmpt.Routing. Raises "
      "InvalidArgumentError naming the image at fault.");

  m.def(
      "routing",
      [](uint32_t group_size, const std::vector<uint32_t>& item_rows,
         const std::vector<std::vector<uint32_t>>& encoded, const SegmentTuples& consumed,
         const std::string& policy) {
        return ToRouting(Assignment(group_size, item_rows, encoded, consumed), item_rows, policy);
      },
      py::arg("cp"), py::arg("item_rows"), py::arg("encoded"), py::arg("consumed"),
      py::arg("policy"),
      "mmpt.Routing.create: a routing's lists checked by cp::ValidateRouting. Raises "
      "InvalidArgumentError naming the rank, item and segment at fault.");

  m.def(
      "routing_from_arrays",
      [](uint32_t group_size, const std::vector<uint32_t>& item_rows,
         const std::vector<uint32_t>& item_encoder,
         const std::vector<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>>&
             routes,
         const std::string& policy) {
        return ToRouting(FromArrays(group_size, item_rows, item_encoder, routes), item_rows,
                         policy);
      },
      py::arg("cp"), py::arg("item_rows"), py::arg("item_encoder"), py::arg("routes"),
      py::arg("policy"),
      "mmpt.Routing.from_arrays: the routing of a loaded batch's flat arrays, checked. Raises "
      "InvalidArgumentError naming the fault.");

  m.def(
      "exchange_indices",
      [](uint32_t group_size, const std::vector<uint32_t>& item_rows,
         const std::vector<std::vector<uint32_t>>& encoded, const SegmentTuples& consumed,
         uint32_t cp_rank) {
        cp::EncoderAssignment assignment = Assignment(group_size, item_rows, encoded, consumed);
        cp::ExchangeIndices x = ValueOrThrow(cp::RankExchange(assignment, item_rows, cp_rank));
        return py::make_tuple(x.send_index, x.send_splits, x.recv_splits, x.gather_index,
                              x.positions);
      },
      py::arg("cp"), py::arg("item_rows"), py::arg("encoded"), py::arg("consumed"),
      py::arg("cp_rank"),
      "`cp_rank`'s side of a routing's embedding exchange (cp::RankExchange): (send_index, "
      "send_splits, recv_splits, gather_index, positions). mmpt.Routing.indices calls it; a "
      "loaded batch carries its own rank's. Raises InvalidArgumentError.");

  m.def(
      "place_images",
      [](const std::vector<uint32_t>& seq_lengths,
         const std::vector<std::tuple<uint32_t, uint32_t, double>>& images) {
        std::vector<cp::SampleImage> in;
        in.reserve(images.size());
        for (const auto& [seq, token_count, vision_cost] : images) {
          cp::SampleImage image;
          image.seq = seq;
          image.token_count = token_count;
          image.vision_cost = vision_cost;
          in.push_back(image);
        }
        std::vector<std::tuple<uint32_t, uint32_t, double>> out;
        for (const cp::CpImage& image : ValueOrThrow(cp::PlaceImages(seq_lengths, in))) {
          out.emplace_back(image.token_start, image.token_count, image.vision_cost);
        }
        return out;
      },
      py::arg("seq_lengths"), py::arg("images"),
      "Place each sample's images among its text as the planner's CP stage does (text spread "
      "evenly around them): `images` are (seq, token_count, vision_cost) grouped by seq; "
      "returns (token_start, token_count, vision_cost) in the unpadded pack, ready for "
      "assign_vision. Raises InvalidArgumentError naming the sample.");
}

}  // namespace mmpt::python
