#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "mmpt/comm/communicator.h"
#include "mmpt/comm/in_process.h"
#include "mmpt/comm/mpi_communicator.h"
#ifdef MMPT_WITH_MPI
#include "mmpt/comm/mpirun_test_util.h"
#endif

namespace mmpt::comm {
namespace {

// Run `body(comm)` on every rank of an in-process group, one thread per rank.
template <typename Body>
void RunRanks(InProcessGroup& group, Body body) {
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < group.size(); ++r) {
    threads.emplace_back([&group, &body, r] { body(group.Rank(r)); });
  }
  for (auto& t : threads) t.join();
}

TEST(InProcessComm, AllGatherAndAllReduceOverManyRounds) {
  InProcessGroup group(4);
  std::array<bool, 4> ok{};
  RunRanks(group, [&](Communicator& comm) {
    bool good = comm.size() == 4;
    for (uint64_t round = 0; round < 200; ++round) {
      const uint64_t mine[2] = {comm.rank() * 1000 + round, round};
      auto all = comm.AllGather(mine);
      good = good && all.ok() && all->size() == 8;
      for (uint32_t r = 0; good && r < 4; ++r) {
        good = (*all)[2 * r] == r * 1000 + round && (*all)[2 * r + 1] == round;
      }
      double values[3] = {double(comm.rank()), double(comm.rank()), double(comm.rank())};
      good = good && comm.AllReduce(std::span<double>(values, 1), ReduceOp::kSum).ok() &&
             comm.AllReduce(std::span<double>(values + 1, 1), ReduceOp::kMin).ok() &&
             comm.AllReduce(std::span<double>(values + 2, 1), ReduceOp::kMax).ok();
      good = good && values[0] == 6.0 && values[1] == 0.0 && values[2] == 3.0;
      good = good && comm.Barrier().ok();
    }
    ok[comm.rank()] = good;
  });
  for (bool b : ok) EXPECT_TRUE(b);
}

TEST(InProcessComm, RankThatNeverArrivesTimesOutWithItsName) {
  InProcessGroup group(3, std::chrono::milliseconds(200));
  std::array<Status, 3> status;
  std::thread t0([&] { status[0] = group.Rank(0).Barrier(); });
  std::thread t2([&] { status[2] = group.Rank(2).Barrier(); });
  t0.join();
  t2.join();
  ASSERT_FALSE(status[0].ok());
  EXPECT_EQ(status[0].code(), StatusCode::kIOError);
  EXPECT_NE(status[0].message().find("ranks not arrived: 1"), std::string::npos)
      << status[0].message();
  EXPECT_FALSE(status[2].ok());
  // The group stays broken: no later collective can silently pair up with the wrong round.
  EXPECT_FALSE(group.Rank(1).Barrier().ok());
}

TEST(InProcessComm, MismatchedCountsAreAnError) {
  InProcessGroup group(2);
  std::array<bool, 2> failed{};
  RunRanks(group, [&](Communicator& comm) {
    std::vector<uint64_t> values(comm.rank() + 1, 7);
    auto all = comm.AllGather(values);
    failed[comm.rank()] = !all.ok() && all.status().code() == StatusCode::kInvalidArgument;
  });
  EXPECT_TRUE(failed[0]);
  EXPECT_TRUE(failed[1]);
}

TEST(PlanAgreement, EqualHashesAgree) {
  const uint64_t hashes[] = {42, 42, 42};
  EXPECT_TRUE(CheckHashesAgree(hashes, 7).ok());
}

TEST(PlanAgreement, MessageNamesStepAndEveryDifferingRank) {
  const uint64_t hashes[] = {0xabc, 0xabc, 0xdef, 0xabc, 0x123};
  Status s = CheckHashesAgree(hashes, 12);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("step 12"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rank 2 has 0000000000000def"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rank 4 has 0000000000000123"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("rank 1 has"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("2 of 5 ranks"), std::string::npos) << s.message();
}

TEST(PlanAgreement, EveryRankGetsTheSameVerdictThroughTheCommunicator) {
  InProcessGroup group(4);
  std::array<Status, 4> verdict;
  RunRanks(group, [&](Communicator& comm) {
    uint64_t hash = comm.rank() == 3 ? 0x99 : 0x11;
    verdict[comm.rank()] = CheckPlanAgreement(comm, hash, 5);
  });
  for (const Status& s : verdict) {
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("rank 3 has 0000000000000099"), std::string::npos) << s.message();
  }
  RunRanks(group,
           [&](Communicator& comm) { verdict[comm.rank()] = CheckPlanAgreement(comm, 0x11, 6); });
  for (const Status& s : verdict) EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(WorldComm, WithoutALauncherIsOneRank) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) GTEST_SKIP() << "running under mpirun";
  auto comm = WorldCommunicator();
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ((*comm)->size(), 1u);
  EXPECT_EQ((*comm)->rank(), 0u);
  const uint64_t one[] = {5};
  EXPECT_TRUE(CheckPlanAgreement(**comm, 5, 0).ok());
  EXPECT_EQ((*comm)->AllGather(one)->size(), 1u);
}

#ifdef MMPT_WITH_MPI
// The body the Dist test below launches on 3 MPI ranks; outside mpirun there is nothing to do.
TEST(MpiRanksDist, ChildBody) {
  if (std::getenv("MMPT_MPI_CHILD") == nullptr) {
    GTEST_SKIP() << "runs only on the ranks MpiDist.ThreeRanksAgreeAndDisagree launches";
  }
  auto world = WorldCommunicator();
  ASSERT_TRUE(world.ok()) << world.status().ToString();
  Communicator& comm = **world;
  EXPECT_EQ(comm.kind(), "mpi");
  ASSERT_EQ(comm.size(), 3u);
  EXPECT_TRUE(CheckPlanAgreement(comm, 0x5eed, 1).ok());
  Status differ = CheckPlanAgreement(comm, comm.rank() == 2 ? 0xbad : 0x5eed, 2);
  ASSERT_FALSE(differ.ok());
  EXPECT_NE(differ.message().find("rank 2 has 0000000000000bad"), std::string::npos);
  double sum[1] = {double(comm.rank() + 1)};
  ASSERT_TRUE(comm.AllReduce(sum, ReduceOp::kSum).ok());
  EXPECT_EQ(sum[0], 6.0);
  EXPECT_TRUE(comm.Barrier().ok());
}

TEST(MpiDist, ThreeRanksAgreeAndDisagree) {
  std::string self = "/proc/self/exe";
  char path[4096];
  ssize_t n = readlink(self.c_str(), path, sizeof(path) - 1);
  ASSERT_GT(n, 0);
  path[n] = '\0';
  std::string command = "MMPT_MPI_CHILD=1 " + testing::MpirunPrefix(3) + path +
                        " --gtest_color=no --gtest_filter=MpiRanksDist.ChildBody 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  int rc = pclose(pipe);
  EXPECT_EQ(rc, 0) << output;
  // Every one of the 3 ranks ran the body and passed.
  size_t passed = 0;
  for (size_t pos = 0; (pos = output.find("[  PASSED  ] 1 test", pos)) != std::string::npos;
       ++pos) {
    ++passed;
  }
  EXPECT_EQ(passed, 3u) << output;
}
#endif  // MMPT_WITH_MPI

}  // namespace
}  // namespace mmpt::comm
