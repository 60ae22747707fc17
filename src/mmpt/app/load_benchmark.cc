#include "mmpt/app/load_benchmark.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/subprocess.h"
#include "mmpt/load/dataset_source.h"
#include "mmpt/load/loader.h"

namespace mmpt::app {

// Moved here from the load module; its names are used unqualified.
using namespace mmpt::load;

ResidentMemory ReadResidentMemory() {
  ResidentMemory m;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    uint64_t kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %lu kB", &kb) == 1) m.rss_bytes = kb * 1024;
    if (std::sscanf(line.c_str(), "VmHWM: %lu kB", &kb) == 1) m.peak_bytes = kb * 1024;
  }
  return m;
}

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Write the micro-steps the baseline loads: every sample by shard stem and line.
Status WriteBaselineInput(const std::string& path, const DatasetSource& source, PlanStream& plans,
                          uint32_t dp_rank, uint64_t micro_steps) {
  const store::Dataset& dataset = source.dataset();
  const media::ResizeRule& rule = source.options().preprocess.resize;
  nlohmann::json input;
  input["dataset"] = dataset.dir();
  input["image_pad"] = source.renderer().pad_id(text::PieceKind::kImage);
  input["factor"] = rule.factor;
  input["min_pixels"] = rule.min_pixels;
  input["max_pixels"] = rule.max_pixels;
  nlohmann::json steps = nlohmann::json::array();
  const uint32_t ga = plans.layout().ga;
  for (uint64_t k = 0; k < micro_steps; ++k) {
    MMPT_ASSIGN_OR_RETURN(std::shared_ptr<const plan::StepPlan> plan, plans.Plan(k / ga));
    nlohmann::json samples = nlohmann::json::array();
    for (uint32_t slot = 0; slot < plan->layout.mbs; ++slot) {
      const plan::PlannedPack& pack = plan->Pack(dp_rank, static_cast<uint32_t>(k % ga), slot);
      for (const plan::PlannedSequence& seq : plan->Sequences(pack)) {
        MMPT_ASSIGN_OR_RETURN(uint64_t global, source.dataset().GlobalIndex(seq.source, seq.index));
        auto [shard, local] = dataset.Locate(global);
        MMPT_ASSIGN_OR_RETURN(const store::StoredSample stored, dataset.Sample(global));
        std::vector<uint32_t> image_positions;
        for (const store::MediaMeta& m : stored.media()) image_positions.push_back(m.text_position);
        samples.push_back({{"stem", dataset.shards().stem(shard)},
                           {"line", local},
                           {"token_begin", stored.meta().token_begin},
                           {"text_tokens", stored.meta().text_tokens},
                           {"image_positions", image_positions}});
      }
    }
    steps.push_back(std::move(samples));
  }
  input["micro_steps"] = std::move(steps);
  return WriteFileAtomic(path, input.dump());
}

Result<LoaderRun> RunBaseline(const LoadBenchmarkOptions& options, const std::string& input) {
  const std::string command =
      fmt::format("'{}' '{}' --input '{}' --workers {} 2>&1", options.python,
                  options.baseline_script, input, options.threads);
  auto output = RunCommand(command);
  if (!output.ok()) return output.status().WithContext("baseline failed");
  nlohmann::json result = nlohmann::json::parse(*output, nullptr, false);
  if (result.is_discarded() || !result.is_object()) {
    return Status::Internal("baseline printed no JSON object: {}\n{}", command, *output);
  }
  LoaderRun run;
  run.micro_steps = result["micro_steps"].get<uint64_t>();
  run.images = result["images"].get<uint64_t>();
  run.tokens = result["tokens"].get<uint64_t>();
  run.seconds = result["seconds"].get<double>();
  run.peak_rss_bytes = result["peak_rss_bytes"].get<uint64_t>();
  return run;
}

}  // namespace

Result<LoadBenchmarkResult> RunLoadBenchmark(const LoadBenchmarkOptions& options) {
  LoadBenchmarkResult result;
  result.threads = options.threads;
  const uint32_t rank = options.comm ? options.comm->rank() : 0;
  result.rank = rank;
  result.ranks = options.comm ? options.comm->size() : 1;
  PlanStreamConfig config = options.plans;
  config.planner.layout.dp = std::max(config.planner.layout.dp, result.ranks);

  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<DatasetSource> source,
                        DatasetSource::Open(options.dataset));
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<PlanStream> plans,
                        PlanStream::Open(options.dataset, config));

  LoaderOptions loader_options;
  loader_options.dp_rank = rank;
  loader_options.threads = options.threads;
  loader_options.prefetch_micro_steps = options.prefetch_micro_steps;
  loader_options.comm = options.comm;

  // The compared micro-steps: the baseline, then mmpt, each from a cold start of its workers.
  if (!options.baseline_script.empty()) {
    const std::string input = (std::filesystem::temp_directory_path() /
                               fmt::format("mmpt_bench_load_{}_{}.json", getpid(), rank))
                                  .string();
    MMPT_RETURN_IF_ERROR(
        WriteBaselineInput(input, *source, *plans, rank, options.compare_micro_steps));
    Result<LoaderRun> baseline = RunBaseline(options, input);
    std::filesystem::remove(input);
    if (!baseline.ok()) return baseline.status();
    result.baseline = *baseline;
  }
  {
    MMPT_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader,
                          Loader::Start(source, plans->AsFunction(), loader_options));
    const auto start = Clock::now();
    for (uint64_t k = 0; k < options.compare_micro_steps; ++k) {
      MMPT_ASSIGN_OR_RETURN(std::shared_ptr<Batch> batch, loader->Next());
      result.mmpt.images += batch->image_grid_thw.size() / 3;
      result.mmpt.tokens += batch->tokens.size();
      ++result.mmpt.micro_steps;
    }
    result.mmpt.seconds = Seconds(start);
    result.mmpt.peak_rss_bytes = ReadResidentMemory().peak_bytes;
  }

  // The long run: keep loading, sample RSS after every batch (cheap: one /proc read).
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader,
                        Loader::Start(source, plans->AsFunction(), loader_options));
  std::vector<uint64_t> rss;
  const auto start = Clock::now();
  while (Seconds(start) < options.long_run_seconds) {
    MMPT_ASSIGN_OR_RETURN(std::shared_ptr<Batch> batch, loader->Next());
    ++result.long_micro_steps;
    rss.push_back(ReadResidentMemory().rss_bytes);
  }
  result.long_seconds = Seconds(start);
  result.rss_samples = rss.size();
  result.rss_peak_bytes = ReadResidentMemory().peak_bytes;
  if (rss.size() >= 4) {
    std::vector<uint64_t> second_half(rss.begin() + rss.size() / 2, rss.end());
    std::nth_element(second_half.begin(), second_half.begin() + second_half.size() / 2,
                     second_half.end());
    result.rss_steady_bytes = second_half[second_half.size() / 2];
    auto mean = [&](size_t from, size_t to) {
      double sum = 0;
      for (size_t i = from; i < to; ++i) sum += static_cast<double>(rss[i]);
      return sum / static_cast<double>(to - from);
    };
    const size_t q = rss.size() / 4;
    result.rss_growth_bytes = static_cast<int64_t>(mean(3 * q, rss.size()) - mean(q, 2 * q));
  }

  return result;
}

std::string FormatLoadBenchmark(const LoadBenchmarkResult& r) {
  auto mib = [](double bytes) { return bytes / (1024.0 * 1024.0); };
  std::string out;
  out += fmt::format("mmpt bench load — rank {} of {}, {} loader threads vs {} Python workers\n",
                     r.rank, r.ranks, r.threads, r.threads);
  out += fmt::format("{:<34}{:>14}{:>14}{:>10}\n", "same micro-steps", "baseline", "mmpt", "ratio");
  auto row = [&](const char* name, double base, double mmpt, const char* unit) {
    out += fmt::format("{:<34}{:>14.2f}{:>14.2f}{:>9.2f}x  {}\n", name, base, mmpt,
                       base > 0 ? mmpt / base : 0.0, unit);
  };
  row("batches/s (micro-steps/s)", r.baseline.batches_per_second(), r.mmpt.batches_per_second(),
      "");
  row("images/s", r.baseline.images_per_second(), r.mmpt.images_per_second(), "");
  row("images/s per core", r.baseline.images_per_second() / r.threads,
      r.mmpt.images_per_second() / r.threads, "");
  out += fmt::format("{:<34}{:>14.1f}{:>14.1f}{:>10}  MiB (baseline: all its processes)\n",
                     "peak RSS", mib(r.baseline.peak_rss_bytes), mib(r.mmpt.peak_rss_bytes), "");
  out += fmt::format("micro-steps compared: {} ({} images, {} tokens)\n", r.mmpt.micro_steps,
                     r.mmpt.images, r.mmpt.tokens);
  out += fmt::format(
      "long run (mmpt alone): {} micro-steps in {:.1f} s = {:.2f} batches/s; RSS peak {:.1f} "
      "MiB, steady {:.1f} MiB, growth {:+.2f} MiB (last quarter vs second quarter, {} samples)\n",
      r.long_micro_steps, r.long_seconds,
      r.long_seconds > 0 ? r.long_micro_steps / r.long_seconds : 0.0, mib(r.rss_peak_bytes),
      mib(r.rss_steady_bytes), mib(static_cast<double>(r.rss_growth_bytes)), r.rss_samples);
  return out;
}

}  // namespace mmpt::app
