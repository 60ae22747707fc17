#include "mmpt/comm/in_process.h"

#include <algorithm>
#include <bit>
#include <string>

#include <fmt/format.h>

namespace mmpt::comm {

class InProcessGroup::RankComm final : public Communicator {
 public:
  RankComm(InProcessGroup* group, uint32_t rank) : group_(group), rank_(rank) {}

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return group_->size(); }
  std::string_view kind() const override { return "in-process"; }

  Status Barrier() override { return group_->Exchange(rank_, {}, Combine::kGather).status(); }

  Result<std::vector<uint64_t>> AllGather(std::span<const uint64_t> values) override {
    return group_->Exchange(rank_, std::vector<uint64_t>(values.begin(), values.end()),
                            Combine::kGather);
  }

  Status AllReduce(std::span<double> values, ReduceOp op) override {
    std::vector<uint64_t> bits(values.size());
    std::transform(values.begin(), values.end(), bits.begin(),
                   [](double v) { return std::bit_cast<uint64_t>(v); });
    Combine combine = op == ReduceOp::kSum   ? Combine::kSumDouble
                      : op == ReduceOp::kMin ? Combine::kMinDouble
                                             : Combine::kMaxDouble;
    MMPT_ASSIGN_OR_RETURN(std::vector<uint64_t> reduced,
                          group_->Exchange(rank_, std::move(bits), combine));
    std::transform(reduced.begin(), reduced.end(), values.begin(),
                   [](uint64_t b) { return std::bit_cast<double>(b); });
    return Status::OK();
  }

 private:
  InProcessGroup* group_;
  uint32_t rank_;
};

InProcessGroup::InProcessGroup(uint32_t size, std::chrono::milliseconds timeout)
    : size_(size == 0 ? 1 : size),
      timeout_(timeout),
      contributions_(size_),
      present_(size_, false) {
  for (uint32_t r = 0; r < size_; ++r) ranks_.push_back(std::make_unique<RankComm>(this, r));
}

InProcessGroup::~InProcessGroup() = default;

Communicator& InProcessGroup::Rank(uint32_t rank) {
  MMPT_CHECK(rank < size_);
  return *ranks_[rank];
}

Status InProcessGroup::Broken() const {
  return Status::IOError("in-process collective: the group is broken: {}", broken_reason_);
}

Result<std::vector<uint64_t>> InProcessGroup::Exchange(uint32_t rank,
                                                       std::vector<uint64_t> contribution,
                                                       Combine combine) {
  std::unique_lock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  auto fail_timeout = [&](std::string_view what) -> Status {
    std::vector<uint32_t> missing;
    for (uint32_t r = 0; r < size_; ++r) {
      if (!present_[r]) missing.push_back(r);
    }
    broken_ = true;
    broken_reason_ = fmt::format("rank {} waited {} ms {}; ranks not arrived: {}", rank,
                                 timeout_.count(), what, fmt::join(missing, ","));
    cv_.notify_all();
    return Broken();
  };
  if (broken_) return Broken();

  // A previous round's result is still being copied out: wait for it to be released.
  if (!cv_.wait_until(lock, deadline, [&] { return broken_ || !result_ready_; })) {
    return fail_timeout("for the previous round to finish");
  }
  if (broken_) return Broken();

  const uint64_t round = generation_;
  contributions_[rank] = std::move(contribution);
  present_[rank] = true;
  if (++arrived_ == size_) {
    const size_t n = contributions_[0].size();
    bool same_size = std::all_of(contributions_.begin(), contributions_.end(),
                                 [n](const auto& c) { return c.size() == n; });
    if (!same_size) {
      result_ = Status::InvalidArgument(
          "in-process collective: ranks contributed different element counts (rank 0: {})", n);
    } else if (combine == Combine::kGather) {
      std::vector<uint64_t> all;
      all.reserve(n * size_);
      for (const auto& c : contributions_) all.insert(all.end(), c.begin(), c.end());
      result_ = std::move(all);
    } else {
      std::vector<uint64_t> out(contributions_[0]);
      for (uint32_t r = 1; r < size_; ++r) {
        for (size_t i = 0; i < n; ++i) {
          double a = std::bit_cast<double>(out[i]);
          double b = std::bit_cast<double>(contributions_[r][i]);
          double v = combine == Combine::kSumDouble   ? a + b
                     : combine == Combine::kMinDouble ? std::min(a, b)
                                                      : std::max(a, b);
          out[i] = std::bit_cast<uint64_t>(v);
        }
      }
      result_ = std::move(out);
    }
    arrived_ = 0;
    std::fill(present_.begin(), present_.end(), false);
    result_ready_ = true;
    ++generation_;
    cv_.notify_all();
  } else if (!cv_.wait_until(lock, deadline, [&] { return broken_ || generation_ != round; })) {
    return fail_timeout("for the other ranks");
  }
  if (broken_) return Broken();

  Result<std::vector<uint64_t>> mine = result_;
  if (++departed_ == size_) {
    departed_ = 0;
    result_ready_ = false;
    cv_.notify_all();
  }
  return mine;
}

namespace {

class SingleRank final : public Communicator {
 public:
  uint32_t rank() const override { return 0; }
  uint32_t size() const override { return 1; }
  std::string_view kind() const override { return "single"; }
  Status Barrier() override { return Status::OK(); }
  Result<std::vector<uint64_t>> AllGather(std::span<const uint64_t> values) override {
    return std::vector<uint64_t>(values.begin(), values.end());
  }
  Status AllReduce(std::span<double>, ReduceOp) override { return Status::OK(); }
};

}  // namespace

std::unique_ptr<Communicator> SingleRankCommunicator() { return std::make_unique<SingleRank>(); }

}  // namespace mmpt::comm
