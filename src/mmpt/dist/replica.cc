#include "mmpt/dist/replica.h"

#include <algorithm>

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

}  // namespace mmpt::dist
