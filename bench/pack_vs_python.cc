// Packing speed: mmpt's first-fit / best-fit decreasing against the Python packers of
// bench/python_ffd.py (Debian's /usr/bin/python3), on the same input in one run.
// The input: token counts of samples drawn from the pretraining-like mix built from
// ../shared/data/real (see plan/real_corpora.h), in the planner's seeded order.
//   build/release/bench/pack_vs_python [samples=20000] [seq_len=8192]
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mmpt/core/mapped_file.h"
#include "mmpt/corpora/real_corpora.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/presets.h"
#include "mmpt/pack/overlong.h"
#include "mmpt/pack/packer.h"
#include "mmpt/plan/sample_order.h"

namespace {

double BestSeconds(int repeats, const std::function<void()>& fn) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

int Run(size_t samples, uint32_t seq_len) {
  using namespace mmpt;
  auto table = corpora::PretrainingMixCorpus();
  auto model = cost::CostModel::FromPresets(cost::Defaults::kVision, cost::Defaults::kLlm,
                                            cost::Defaults::kHardware);
  if (!table.ok() || !model.ok()) {
    fmt::print(stderr, "error: {}\n", (!table.ok() ? table.status() : model.status()).ToString());
    return 1;
  }
  auto costs = cost::CostSamples(*table, *model);
  std::vector<double> weights(std::begin(corpora::kPretrainingMixWeights),
                              std::end(corpora::kPretrainingMixWeights));
  std::vector<uint64_t> sizes;
  for (size_t s = 0; s < table->num_sources(); ++s) sizes.push_back(table->source_size(s));
  auto order = plan::SampleOrder::Create(sizes, weights, 1);
  std::vector<pack::PackItem> items;
  std::string lines;
  while (items.size() < samples) {
    auto d = order->Next();
    uint64_t row = table->source_begin[d.source] + d.index;
    auto fit = pack::FitToLength(table->text_tokens[row], costs->image_tokens[row], seq_len,
                                 pack::OverlongPolicy::kTruncate);
    if (fit.dropped) continue;
    items.push_back({fit.tokens, 0});
    lines += fmt::format("{}\n", fit.tokens);
  }
  std::string path = fmt::format("/tmp/mmpt_pack_vs_python_{}.txt", ::getpid());
  if (!WriteFileAtomic(path, lines).ok()) return 1;

  std::string command =
      fmt::format("/usr/bin/python3 {}/bench/python_ffd.py {} {}", MMPT_SOURCE_DIR, path, seq_len);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return 1;
  std::map<std::string, nlohmann::json> python;
  char buffer[4096];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    auto j = nlohmann::json::parse(buffer, nullptr, false);
    if (!j.is_discarded()) python[j["algorithm"]] = j;
  }
  int rc = ::pclose(pipe);
  std::remove(path.c_str());
  if (rc != 0 || !python.count("ffd") || !python.count("bfd_bisect")) {
    fmt::print(stderr, "error: the Python baseline failed ({})\n", command);
    return 1;
  }

  pack::Packing ffd, bfd;
  double ffd_seconds = BestSeconds(5, [&] {
    ffd = *pack::PackItems(items, {seq_len, 0, 0}, pack::Algorithm::kFirstFitDecreasing);
  });
  double bfd_seconds = BestSeconds(5, [&] {
    bfd = *pack::PackItems(items, {seq_len, 0, 0}, pack::Algorithm::kBestFitDecreasing);
  });
  fmt::print("{} samples from the real-data mix, seq_len {}\n\n", items.size(), seq_len);
  fmt::print("{:<40}{:>10}{:>14}{:>12}\n", "packer", "packs", "seconds", "ratio");
  double py_ffd = python["ffd"]["seconds"], py_bfd = python["bfd_bisect"]["seconds"];
  fmt::print("{:<40}{:>10}{:>14.6f}{:>12}\n", "python first-fit decreasing (linear scan)",
             python["ffd"]["packs"].get<uint64_t>(), py_ffd, "1.0x");
  fmt::print("{:<40}{:>10}{:>14.6f}{:>12}\n", "python best-fit decreasing (bisect)",
             python["bfd_bisect"]["packs"].get<uint64_t>(), py_bfd, "");
  fmt::print("{:<40}{:>10}{:>14.6f}{:>11.0f}x\n", "mmpt first-fit decreasing", ffd.num_packs(),
             ffd_seconds, py_ffd / ffd_seconds);
  fmt::print("{:<40}{:>10}{:>14.6f}{:>11.0f}x\n", "mmpt best-fit decreasing", bfd.num_packs(),
             bfd_seconds, py_ffd / bfd_seconds);
  fmt::print("\nmmpt FFD vs python FFD: {:.0f}x; mmpt BFD vs python bisect BFD: {:.0f}x\n",
             py_ffd / ffd_seconds, py_bfd / bfd_seconds);
  if (python["ffd"]["packs"].get<uint64_t>() != ffd.num_packs()) {
    fmt::print(stderr, "error: python FFD made {} packs, mmpt FFD {}: not the same algorithm\n",
               python["ffd"]["packs"].get<uint64_t>(), ffd.num_packs());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  size_t samples = 20000;
  uint32_t seq_len = 8192;
  CLI::App app{"first-fit decreasing packing, mmpt vs Python"};
  app.add_option("samples", samples, "samples to pack")->check(CLI::PositiveNumber);
  app.add_option("seq_len", seq_len, "pack length")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  return Run(samples, seq_len);
}
