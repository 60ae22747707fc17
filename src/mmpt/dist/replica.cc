#include "mmpt/dist/replica.h"

#include <algorithm>
#include <map>

namespace mmpt::dist {

using namespace load;  // the loader and the Batch this module carries between ranks
namespace {

constexpr std::string_view kDimNames[] = {"tp", "cp", "dp", "pp"};

}  // namespace

Result<RankOrder> ParseRankOrder(std::string_view text) {
  RankOrder order{};
  size_t n = 0;
  bool seen[4] = {};
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find('-', begin), text.size());
    const std::string_view name = text.substr(begin, end - begin);
    begin = end + 1;
    if (name == "ep") continue;
    auto it = std::find(std::begin(kDimNames), std::end(kDimNames), name);
    if (it == std::end(kDimNames) || seen[it - std::begin(kDimNames)]) {
      return Status::InvalidArgument(
          "rank order '{}': expected tp, cp, dp and pp once each, joined by '-' (e.g. "
          "tp-cp-dp-pp)",
          text);
    }
    seen[it - std::begin(kDimNames)] = true;
    order[n++] = static_cast<RankDim>(it - std::begin(kDimNames));
  }
  if (n != 4) {
    return Status::InvalidArgument("rank order '{}' names {} of tp, cp, dp and pp", text, n);
  }
  return order;
}

std::string RankOrderName(const RankOrder& order) {
  std::string out;
  for (RankDim dim : order) {
    if (!out.empty()) out += '-';
    out += kDimNames[static_cast<int>(dim)];
  }
  return out;
}

std::string_view StageRoleName(StageRole role) {
  switch (role) {
    case StageRole::kOnly: return "only";
    case StageRole::kFirst: return "first";
    case StageRole::kMiddle: return "middle";
    case StageRole::kLast: return "last";
  }
  return "?";
}

uint32_t FieldsOf(StageRole role) {
  switch (role) {
    case StageRole::kOnly: return kAllFields;
    case StageRole::kFirst: return kInputFields;
    case StageRole::kMiddle: return kShapeFields;
    case StageRole::kLast: return kTargetFields;
  }
  return kAllFields;
}

RankGrid::RankGrid(const plan::Layout& layout, RankOrder order)
    : order_(order),
      dp_(layout.dp),
      cp_(layout.cp),
      tp_(layout.tp),
      pp_(layout.pp),
      world_(layout.dp * layout.cp * layout.tp * layout.pp) {}

Result<RankGrid> RankGrid::Create(const plan::Layout& layout, RankOrder order) {
  if (layout.dp == 0 || layout.cp == 0 || layout.tp == 0 || layout.pp == 0) {
    return Status::InvalidArgument("layout dp {} cp {} tp {} pp {}: every size must be ≥ 1",
                                   layout.dp, layout.cp, layout.tp, layout.pp);
  }
  return RankGrid(layout, order);
}

uint32_t RankGrid::SizeOf(RankDim dim) const {
  switch (dim) {
    case RankDim::kTp: return tp_;
    case RankDim::kCp: return cp_;
    case RankDim::kDp: return dp_;
    case RankDim::kPp: return pp_;
  }
  return 1;
}

Result<RankPlace> RankGrid::Place(uint32_t rank) const {
  if (rank >= world_) {
    return Status::InvalidArgument(
        "rank {} is outside the layout's {} ranks (dp {} × cp {} × tp {} × pp {})", rank, world_,
        dp_, cp_, tp_, pp_);
  }
  RankPlace place;
  place.rank = rank;
  uint32_t rest = rank;
  for (RankDim dim : order_) {
    const uint32_t coordinate = rest % SizeOf(dim);
    rest /= SizeOf(dim);
    switch (dim) {
      case RankDim::kTp: place.tp = coordinate; break;
      case RankDim::kCp: place.cp = coordinate; break;
      case RankDim::kDp: place.dp = coordinate; break;
      case RankDim::kPp: place.pp = coordinate; break;
    }
  }
  place.role = pp_ == 1              ? StageRole::kOnly
               : place.pp == 0       ? StageRole::kFirst
               : place.pp + 1 == pp_ ? StageRole::kLast
                                     : StageRole::kMiddle;
  return place;
}

uint32_t RankGrid::RankAt(uint32_t dp, uint32_t cp, uint32_t tp, uint32_t pp) const {
  uint32_t rank = 0;
  uint32_t stride = 1;
  for (RankDim dim : order_) {
    const uint32_t coordinate = dim == RankDim::kTp   ? tp
                                : dim == RankDim::kCp ? cp
                                : dim == RankDim::kDp ? dp
                                                      : pp;
    rank += coordinate * stride;
    stride *= SizeOf(dim);
  }
  return rank;
}

std::vector<uint32_t> RankGrid::Replica(uint32_t dp, uint32_t cp) const {
  std::vector<uint32_t> ranks;
  for (uint32_t pp = 0; pp < pp_; ++pp) {
    for (uint32_t tp = 0; tp < tp_; ++tp) ranks.push_back(RankAt(dp, cp, tp, pp));
  }
  return ranks;
}

std::vector<uint32_t> RankGrid::LoadingRanks() const {
  std::vector<uint32_t> ranks;
  for (uint32_t d = 0; d < dp_; ++d) {
    for (uint32_t c = 0; c < cp_; ++c) ranks.push_back(RankAt(d, c, 0, 0));
  }
  return ranks;
}

Result<ReplicaShare> PlanReplicaShare(const RankGrid& grid, std::span<const std::string> nodes,
                                      uint32_t rank) {
  if (nodes.size() != grid.world_size()) {
    return Status::InvalidArgument("replica share: {} node labels for {} ranks", nodes.size(),
                                   grid.world_size());
  }
  MMPT_ASSIGN_OR_RETURN(const RankPlace place, grid.Place(rank));
  std::vector<uint32_t> fields(grid.world_size());
  for (uint32_t r = 0; r < grid.world_size(); ++r) {
    MMPT_ASSIGN_OR_RETURN(const RankPlace p, grid.Place(r));
    fields[r] = FieldsOf(p.role);
  }
  ReplicaShare share;
  // Every replica's groups, replica by replica in (dp, cp) order, so that all ranks agree.
  for (uint32_t d = 0; d < grid.dp(); ++d) {
    for (uint32_t c = 0; c < grid.cp(); ++c) {
      const std::vector<uint32_t> members = grid.Replica(d, c);
      const uint32_t loading = members.front();
      // The replica's ranks by node, nodes in order of their first rank.
      std::vector<std::vector<uint32_t>> by_node;
      for (uint32_t r : members) {
        auto same = [&](const std::vector<uint32_t>& ranks) { return nodes[ranks[0]] == nodes[r]; };
        auto it = std::find_if(by_node.begin(), by_node.end(), same);
        if (it == by_node.end()) {
          by_node.push_back({r});
        } else {
          it->push_back(r);
        }
      }
      // One group per distinct field set, with the first rank of each remote node needing it.
      std::map<uint32_t, std::vector<uint32_t>> receivers;
      for (const std::vector<uint32_t>& ranks : by_node) {
        if (nodes[ranks[0]] == nodes[loading]) continue;
        uint32_t needed = 0;
        for (uint32_t r : ranks) needed |= fields[r];
        receivers[needed].push_back(ranks[0]);
      }
      for (const auto& [needed, ranks] : receivers) {
        BroadcastGroup group{{loading}, needed};
        group.ranks.insert(group.ranks.end(), ranks.begin(), ranks.end());
        const bool member = std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
        if (rank == loading) share.sends.push_back(share.groups.size());
        if (member) share.source = static_cast<int64_t>(share.groups.size());
        share.groups.push_back(std::move(group));
      }
      if (d != place.dp || c != place.cp) continue;
      share.loading_rank = loading;
      for (const std::vector<uint32_t>& ranks : by_node) {
        if (nodes[ranks[0]] != nodes[rank]) continue;
        share.ring_writer = ranks[0];
        share.ring_readers.assign(ranks.begin() + 1, ranks.end());
        for (uint32_t r : share.ring_readers) share.ring_fields |= fields[r];
      }
    }
  }
  return share;
}

}  // namespace mmpt::dist
