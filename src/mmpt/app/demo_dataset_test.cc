#include "mmpt/app/demo_dataset.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "mmpt/store/dataset.h"
#include "mmpt/store/store_test_util.h"
#include "mmpt/store/verify.h"

namespace mmpt::app {

// Moved here from the store module; its names are used unqualified.
using namespace mmpt::store;
namespace {

TEST(DemoDatasetTest, SynthesizesAndPreparesRealDataWithTheDefaultTokenizer) {
  auto tokenizer = text::FindTokenizer();
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString()
                              << " (scripts/install-deps.sh installs the default tokenizer)";
  DemoDatasetOptions options;
  options.work_dir = testing::FreshDir("demo");
  options.coco_samples = 12;
  options.mmc4_docs = 3;
  options.threads = 2;
  options.progress = false;
  auto demo = BuildDemoDataset(options);
  ASSERT_TRUE(demo.ok()) << demo.status().ToString();
  EXPECT_EQ(demo->prepare.samples, 15u);
  EXPECT_EQ(demo->prepare.skipped, 0u);
  EXPECT_TRUE(VerifyDataset(demo->dataset_dir, {2, false}, nullptr).ok());
  auto dataset = Dataset::Open(demo->dataset_dir);
  ASSERT_TRUE(dataset.ok());
  EXPECT_EQ(dataset->sources(), (std::vector<std::string>{"coco", "mmc4"}));
  EXPECT_GT(dataset->Sample(0)->meta().text_tokens, 5u);  // a caption and a prompt, real tokenizer
}

}  // namespace
}  // namespace mmpt::app
