#include "mmpt/ingest/inputs.h"
#include "mmpt/core/temp_dir_test_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace mmpt::ingest {
namespace {

std::vector<InputSpec> Expand(std::vector<std::string> args) {
  auto inputs = ExpandInputs(args);
  EXPECT_TRUE(inputs.ok()) << inputs.status().ToString();
  return inputs.ok() ? *inputs : std::vector<InputSpec>{};
}

std::vector<std::string> Paths(const std::vector<InputSpec>& inputs) {
  std::vector<std::string> paths;
  for (const InputSpec& input : inputs) paths.push_back(input.path);
  return paths;
}

std::vector<std::string> Sources(const std::vector<InputSpec>& inputs) {
  std::vector<std::string> sources;
  for (const InputSpec& input : inputs) sources.push_back(input.source);
  return sources;
}

TEST(ExpandInputsTest, BracesExpandPaddedAsWrittenIntoOneShardSet) {
  const auto set = Expand({"d/shard-{0998..1000}.tar"});
  EXPECT_EQ(Paths(set),
            (std::vector<std::string>{"d/shard-0998.tar", "d/shard-0999.tar", "d/shard-1000.tar"}));
  EXPECT_EQ(Sources(set), (std::vector<std::string>{"shard", "shard", "shard"}));
  EXPECT_EQ(Paths(Expand({"x{8..10}.tar"})),
            (std::vector<std::string>{"x8.tar", "x9.tar", "x10.tar"}));
  EXPECT_EQ(Paths(Expand({"x{08..10}_{0..1}.tar"})),
            (std::vector<std::string>{"x08_0.tar", "x08_1.tar", "x09_0.tar", "x09_1.tar",
                                      "x10_0.tar", "x10_1.tar"}));
  EXPECT_EQ(Expand({"shard-{0000..0999}.tar"}).size(), 1000u);
}

TEST(ExpandInputsTest, MalformedBracesAreRefusedNamingThem) {
  for (std::string bad : {"shard-{0000..}.tar", "shard-{0000..0999.tar", "shard-0}.tar",
                          "shard-{0010..0001}.tar", "shard-{a..b}.tar", "shard-{0,1}.tar"}) {
    auto inputs = ExpandInputs(std::vector<std::string>{"laion=" + bad});
    ASSERT_FALSE(inputs.ok()) << bad;
    EXPECT_EQ(inputs.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(inputs.status().message().find("malformed brace in '" + bad + "'"), std::string::npos)
        << inputs.status().ToString();
  }
  EXPECT_FALSE(ExpandInputs(std::vector<std::string>{"x{0..99999999}.tar"}).ok());
}

TEST(ExpandInputsTest, ShardSetsAreNamedByTheirStemUnlessNamed) {
  EXPECT_EQ(Sources(Expand({"d/shard-0000.tar", "d/shard-0001.tar", "d/coco.tar"})),
            (std::vector<std::string>{"shard", "shard", "coco"}));
  EXPECT_EQ(Sources(Expand({"laion=d/shard-{0000..0001}.tar", "d/x_1.tar", "d/x_2.tar"})),
            (std::vector<std::string>{"laion", "laion", "x", "x"}));
  // Not a set: one file alone, other extensions, other folders, JSONL.
  EXPECT_EQ(Sources(Expand({"d/shard-0000.tar"})), (std::vector<std::string>{"shard-0000"}));
  EXPECT_EQ(Sources(Expand({"d/a-1.tar", "d/a-2.tar.gz", "e/a-3.tar"})),
            (std::vector<std::string>{"a-1", "a-2", "a-3"}));
  EXPECT_EQ(Sources(Expand({"d/p-1.jsonl", "d/p-2.jsonl"})),
            (std::vector<std::string>{"p-1", "p-2"}));
  // Digits alone: the set takes its folder's name.
  EXPECT_EQ(Sources(Expand({"data/laion/00000.tar", "data/laion/00001.tar"})),
            (std::vector<std::string>{"laion", "laion"}));
}

TEST(ExpandInputsTest, ADirectoryIsItsTarsAsOneSource) {
  const std::string dir = test_util::FreshDir("expand_inputs/laion-2b");
  std::filesystem::create_directories(dir + "/nested");
  for (const char* name : {"00001.tar.gz", "00000.tar", "readme.txt", "nested/00002.tar"}) {
    std::ofstream(dir + "/" + name) << "x";
  }
  const auto inputs = Expand({dir + "/"});
  EXPECT_EQ(Paths(inputs), (std::vector<std::string>{dir + "/00000.tar", dir + "/00001.tar.gz"}));
  EXPECT_EQ(Sources(inputs), (std::vector<std::string>{"laion-2b", "laion-2b"}));
  EXPECT_EQ(Sources(Expand({"web=" + dir})), (std::vector<std::string>{"web", "web"}));
  EXPECT_EQ(Sources(Expand({dir + "/nested/.."})),
            (std::vector<std::string>{"laion-2b", "laion-2b"}));
  std::filesystem::remove(dir + "/00000.tar");
  std::filesystem::remove(dir + "/00001.tar.gz");
  auto none = ExpandInputs(std::vector<std::string>{dir});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find(dir), std::string::npos) << none.status().ToString();
}

}  // namespace
}  // namespace mmpt::ingest
