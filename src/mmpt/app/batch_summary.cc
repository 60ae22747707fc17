#include "mmpt/app/batch_summary.h"

#include <chrono>

#include <fmt/format.h>

#include "mmpt/load/dataset_source.h"
#include "mmpt/load/loader.h"

namespace mmpt::app {

// Moved here from the load module; its names are used unqualified.
using namespace mmpt::load;

std::string SummarizeBatch(const Batch& b) {
  const size_t t = b.tokens.size();
  size_t targets = 0;
  for (float m : b.loss_mask) targets += m != 0.0f;
  std::string out = fmt::format("step {} micro-step {} (dp rank {}, cp rank {}/{}), plan {:016x}\n",
                                b.step, b.micro_step, b.dp_rank, b.cp_rank, b.cp, b.plan_hash);
  out += fmt::format("  tokens          [{}] int32, {} with loss\n", t, targets);
  out += fmt::format("  position_ids    [{}{}] int32{}\n",
                     b.position_rows == 1 ? "" : fmt::format("{}, ", b.position_rows), t,
                     b.position_rows == 3 ? " (M-RoPE t, h, w)" : "");
  out += fmt::format("  cu_seqlens      [{}] int32, {} sub-sequences, max_seqlen {}\n",
                     b.cu_seqlens.size(), b.cu_seqlens.size() - 1, b.max_seqlen);
  out += fmt::format("  pixel_values    [{}, {}] float32 ({:.1f} MiB)\n", b.num_patches(),
                     b.patch_dim, b.pixel_values.size() * 4.0 / (1024 * 1024));
  out += fmt::format("  image_grid_thw  [{}, 3] int32", b.image_grid_thw.size() / 3);
  for (size_t i = 0; i < b.image_grid_thw.size() && i < 9; i += 3) {
    out += fmt::format(" {}x{}x{}", b.image_grid_thw[i], b.image_grid_thw[i + 1],
                       b.image_grid_thw[i + 2]);
  }
  out += b.image_grid_thw.size() > 9 ? " ...\n" : "\n";
  if (!b.dropped.empty()) {
    out += fmt::format("  dropped         {} samples, first: {}\n", b.dropped.size(),
                       b.dropped.front().reason);
  }
  return out;
}

Result<std::string> LoadAndSummarize(const std::string& dataset, const PlanStreamConfig& config,
                                     uint32_t count, uint32_t threads) {
  using Clock = std::chrono::steady_clock;
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<DatasetSource> source, DatasetSource::Open(dataset));
  MMPT_ASSIGN_OR_RETURN(std::shared_ptr<PlanStream> plans, PlanStream::Open(dataset, config));
  LoaderOptions options;
  options.threads = threads;
  const auto start = Clock::now();
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader,
                        Loader::Start(source, plans->AsFunction(), options));
  std::string out;
  auto last = start;
  for (uint32_t i = 0; i < count; ++i) {
    MMPT_ASSIGN_OR_RETURN(std::shared_ptr<Batch> batch, loader->Next());
    if (batch == nullptr) break;
    const auto now = Clock::now();
    out += SummarizeBatch(*batch);
    out += fmt::format("  arrived after   {:.1f} ms\n",
                       std::chrono::duration<double, std::milli>(now - last).count());
    last = now;
  }
  out += fmt::format("{} batches in {:.2f} s with {} loader threads\n", count,
                     std::chrono::duration<double>(Clock::now() - start).count(), threads);
  return out;
}

}  // namespace mmpt::app
