// Micro benchmarks of LogMelExtractor on one thread: Extract (bench/log_mel_bench.py compares it
// with the NumPy reference), and one Qwen2.5-Omni clip's features, whole window vs kept frames.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "mmpt/media/log_mel.h"

namespace mmpt::media {
namespace {

// A clip of `seconds`: a 200 Hz tone with harmonics over faint noise.
std::vector<float> Clip(const LogMelConfig& config, int64_t seconds) {
  const size_t samples = static_cast<size_t>(seconds) * config.sample_rate;
  std::vector<float> pcm(samples);
  std::mt19937 rng(14);
  std::normal_distribution<float> noise(0.0f, 0.002f);
  for (size_t i = 0; i < samples; ++i) {
    const double t = static_cast<double>(i) / config.sample_rate;
    double value = 0.0;
    for (int h = 1; h <= 8; ++h) value += std::sin(2 * std::numbers::pi * 200 * h * t) / h;
    pcm[i] = static_cast<float>(0.1 * value) + noise(rng);
  }
  return pcm;
}

void BM_LogMel(benchmark::State& state) {
  const LogMelConfig config{.n_mels = 128};  // Qwen2-Audio's
  const std::vector<float> pcm = Clip(config, state.range(0));
  auto extractor = LogMelExtractor::Create(config);
  for (auto _ : state) {
    auto features = (*extractor)->Extract(pcm);
    benchmark::DoNotOptimize(features->input_features.data());
  }
  state.counters["audio_s/s"] = benchmark::Counter(
      static_cast<double>(state.range(0)) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_LogMel)->Arg(5)->Arg(30)->Unit(benchmark::kMillisecond);

// One clip's features for a batch under Qwen2.5-Omni's 300 s window, as the loader computes
// them: range(1) 0, the whole window into a reused buffer, then the clip's frames copied out
// (before issue #29); 1, only the clip's frames (ExtractInto into the batch's buffer).
void BM_OmniClip(benchmark::State& state) {
  const LogMelConfig config{// Qwen2.5-Omni's
                            .n_mels = 128,
                            .chunk_seconds = 300,
                            .padding = ClipPadding::kWindowMasked};
  const std::vector<float> pcm = Clip(config, state.range(0));
  auto extractor = LogMelExtractor::Create(config);
  const uint32_t kept = ValidFrames(config, pcm.size());
  const uint32_t frames = state.range(1) == 0 ? config.Frames() : kept;
  std::vector<float> features(size_t{config.n_mels} * frames), batch(size_t{config.n_mels} * kept);
  std::vector<int32_t> mask(frames);
  for (auto _ : state) {
    auto valid = (*extractor)->ExtractInto(pcm, features, mask);
    if (frames != kept) {
      for (uint32_t m = 0; m < config.n_mels; ++m) {
        std::copy_n(features.begin() + size_t{m} * frames, kept, batch.begin() + size_t{m} * kept);
      }
    }
    benchmark::DoNotOptimize(*valid);
    benchmark::DoNotOptimize(batch.data());
  }
}
BENCHMARK(BM_OmniClip)
    ->ArgsProduct({{1, 5, 30}, {0, 1}})
    ->ArgNames({"seconds", "kept_only"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mmpt::media
