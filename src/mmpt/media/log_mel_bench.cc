// Micro benchmark of LogMelExtractor::Extract on one thread; bench/log_mel_bench.py compares it
// with the NumPy reference.

#include <benchmark/benchmark.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "mmpt/media/log_mel.h"

namespace mmpt::media {
namespace {

// A clip of `state.range(0)` seconds: a 200 Hz tone with harmonics over faint noise.
void BM_LogMel(benchmark::State& state) {
  const LogMelConfig config = *AudioPreset("qwen2-audio");
  const size_t samples = static_cast<size_t>(state.range(0)) * config.sample_rate;
  std::vector<float> pcm(samples);
  std::mt19937 rng(14);
  std::normal_distribution<float> noise(0.0f, 0.002f);
  for (size_t i = 0; i < samples; ++i) {
    const double t = static_cast<double>(i) / config.sample_rate;
    double value = 0.0;
    for (int h = 1; h <= 8; ++h) value += std::sin(2 * std::numbers::pi * 200 * h * t) / h;
    pcm[i] = static_cast<float>(0.1 * value) + noise(rng);
  }
  auto extractor = LogMelExtractor::Create(config);
  for (auto _ : state) {
    auto features = (*extractor)->Extract(pcm);
    benchmark::DoNotOptimize(features->input_features.data());
  }
  state.counters["audio_s/s"] = benchmark::Counter(
      static_cast<double>(state.range(0)) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_LogMel)->Arg(5)->Arg(30)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mmpt::media
