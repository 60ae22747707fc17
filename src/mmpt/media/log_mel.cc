#include "mmpt/media/log_mel.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <mutex>
#include <numbers>
#include <utility>

namespace mmpt::media {
namespace {

// Hugging Face's mel_filter_bank hard-codes this band for Whisper (min_frequency, max_frequency).
constexpr double kMinHz = 0.0;
constexpr double kMaxHz = 8000.0;
constexpr double kPowerFloor = 1e-10;  // log10 is taken of at least this (-10)
constexpr double kDynamicRange = 8.0;  // log10 units kept below the clip's maximum

// Slaney's mel scale (librosa's default, htk=False): linear below 1 kHz, logarithmic above.
constexpr double kHzPerMel = 200.0 / 3.0;
constexpr double kLogStartHz = 1000.0;
constexpr double kLogStartMel = kLogStartHz / kHzPerMel;  // 15
const double kMelsPerLogStep = 27.0 / std::log(6.4);

// Index `j` of a signal [0, last] reflected at both ends without repeating the edge sample, as
// numpy.pad(mode="reflect") extends it, repeatedly where the padding outgrows the signal.
int64_t Reflect(int64_t j, int64_t last) {
  if (last == 0) return 0;
  const int64_t period = 2 * last;
  j %= period;
  if (j < 0) j += period;
  return j > last ? period - j : j;
}

double HzToMel(double hz) {
  if (hz < kLogStartHz) return hz / kHzPerMel;
  return kLogStartMel + std::log(hz / kLogStartHz) * kMelsPerLogStep;
}

double MelToHz(double mel) {
  if (mel < kLogStartMel) return mel * kHzPerMel;
  return kLogStartHz * std::exp((mel - kLogStartMel) / kMelsPerLogStep);
}

// numpy.linspace's values: start + i·step, the last exactly `stop`.
std::vector<double> Linspace(double start, double stop, size_t count) {
  std::vector<double> values(count);
  const double step = (stop - start) / static_cast<double>(count - 1);
  for (size_t i = 0; i < count; ++i) values[i] = start + static_cast<double>(i) * step;
  values.back() = stop;
  return values;
}

// FFTW's planner (and plan destruction) is not thread-safe; execution with the new-array
// functions is.
std::mutex& PlannerMutex() {
  static std::mutex mutex;
  return mutex;
}

// Per-thread buffers of Extract, kept between calls.
struct Scratch {
  std::vector<double> frame;
  std::vector<std::complex<double>> spectrum;
  std::vector<double> power;
};

Scratch& ThreadScratch(uint32_t n_fft) {
  thread_local Scratch scratch;
  const size_t bins = n_fft / 2 + 1;
  if (scratch.frame.size() != n_fft) scratch.frame.resize(n_fft);
  if (scratch.spectrum.size() != bins) scratch.spectrum.resize(bins);
  if (scratch.power.size() != bins) scratch.power.resize(bins);
  return scratch;
}

Status Validate(const LogMelConfig& config) {
  if (config.sample_rate == 0 || config.n_fft == 0 || config.hop == 0 || config.n_mels == 0 ||
      config.chunk_seconds == 0) {
    return Status::InvalidArgument(
        "log-mel config: sample_rate {}, n_fft {}, hop {}, n_mels {}, chunk_seconds {}: none "
        "may be zero",
        config.sample_rate, config.n_fft, config.hop, config.n_mels, config.chunk_seconds);
  }
  if (config.WindowSamples() % config.hop != 0) {
    return Status::InvalidArgument(
        "log-mel config: window of {} samples is not a whole number "
        "of {}-sample hops",
        config.WindowSamples(), config.hop);
  }
  // Reflect padding by n_fft / 2 needs that many samples beyond the first and last.
  if (config.n_fft / 2 >= config.WindowSamples()) {
    return Status::InvalidArgument("log-mel config: n_fft {} exceeds the {}-sample window",
                                   config.n_fft, config.WindowSamples());
  }
  return Status::OK();
}

// Frames out of a convolution of kernel 3, stride 2, padding 1: Python's (n - 1) // 2 + 1,
// which is 0 for no frames.
uint32_t Stride2(uint32_t frames) { return frames == 0 ? 0 : (frames - 1) / 2 + 1; }

// kChunkedConv's chunk (n_window 50, × 2) and its tokens (Stride2 thrice of 100).
constexpr uint32_t kChunkFrames = 100;
constexpr uint32_t kChunkTokens = 13;

}  // namespace

std::string_view ClipPaddingName(ClipPadding padding) {
  switch (padding) {
    case ClipPadding::kWindow: return "window";
    case ClipPadding::kWindowMasked: return "window-masked";
    case ClipPadding::kClip: return "clip";
  }
  return "unknown";
}

Result<ClipPadding> ParseClipPadding(std::string_view name) {
  for (ClipPadding p : {ClipPadding::kWindow, ClipPadding::kWindowMasked, ClipPadding::kClip}) {
    if (ClipPaddingName(p) == name) return p;
  }
  return Status::InvalidArgument("padding '{}': known are window, window-masked, clip", name);
}

std::string_view AudioTokenRuleName(AudioTokenRule rule) {
  return rule == AudioTokenRule::kChunkedConv ? "chunked-conv" : "conv-then-pool";
}

Result<AudioTokenRule> ParseAudioTokenRule(std::string_view name) {
  for (AudioTokenRule r : {AudioTokenRule::kConvThenPool, AudioTokenRule::kChunkedConv}) {
    if (AudioTokenRuleName(r) == name) return r;
  }
  return Status::InvalidArgument("tokens '{}': known are conv-then-pool, chunked-conv", name);
}

uint32_t ValidFrames(const LogMelConfig& config, uint64_t samples) {
  const uint64_t frames = config.padding == ClipPadding::kClip
                              ? samples / config.hop
                              : (samples + config.hop - 1) / config.hop;
  return static_cast<uint32_t>(std::min<uint64_t>(config.Frames(), frames));
}

uint32_t AudioTokens(AudioTokenRule rule, uint32_t valid_frames) {
  switch (rule) {
    case AudioTokenRule::kConvThenPool: {
      const uint32_t after_conv = Stride2(valid_frames);
      // Pooling by 2 over fewer than 2 frames: Python's (1 - 2) // 2 + 1 is 0.
      return after_conv < 2 ? 0 : (after_conv - 2) / 2 + 1;
    }
    case AudioTokenRule::kChunkedConv: {
      const uint32_t rest = valid_frames % kChunkFrames;
      return valid_frames / kChunkFrames * kChunkTokens + Stride2(Stride2(Stride2(rest)));
    }
  }
  return 0;
}

uint32_t FramesOfTokens(AudioTokenRule rule, uint32_t tokens) {
  switch (rule) {
    case AudioTokenRule::kConvThenPool: return 4 * tokens;
    case AudioTokenRule::kChunkedConv:
      return tokens / kChunkTokens * kChunkFrames + 8 * (tokens % kChunkTokens);
  }
  return 0;
}

LogMelExtractor::LogMelExtractor(const LogMelConfig& config) : config_(config) {}

LogMelExtractor::~LogMelExtractor() {
  if (plan_ != nullptr) {
    std::lock_guard lock(PlannerMutex());
    fftw_destroy_plan(static_cast<fftw_plan>(plan_));
  }
}

Result<std::shared_ptr<const LogMelExtractor>> LogMelExtractor::Create(const LogMelConfig& config) {
  MMPT_RETURN_IF_ERROR(Validate(config));
  std::shared_ptr<LogMelExtractor> extractor(new LogMelExtractor(config));
  const uint32_t n_fft = config.n_fft;
  const uint32_t bins = n_fft / 2 + 1;

  // Periodic Hann window (torch.hann_window's and window_function(..., "hann")'s default).
  extractor->window_.resize(n_fft);
  for (uint32_t n = 0; n < n_fft; ++n) {
    extractor->window_[n] = 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * n / n_fft);
  }

  // Triangles between n_mels + 2 edge frequencies equally spaced in mel, each scaled by
  // 2 / (its width in Hz) so that every band has about the same energy (Slaney's norm).
  const std::vector<double> edges_mel =
      Linspace(HzToMel(kMinHz), HzToMel(kMaxHz), size_t{config.n_mels} + 2);
  std::vector<double> edges_hz(edges_mel.size());
  std::transform(edges_mel.begin(), edges_mel.end(), edges_hz.begin(), MelToHz);
  // Bin centres up to sampling_rate // 2, integer division as the reference writes it.
  const std::vector<double> bin_hz = Linspace(0.0, config.sample_rate / 2, bins);
  extractor->mel_filters_.assign(size_t{config.n_mels} * bins, 0.0);
  extractor->bands_.resize(config.n_mels);
  for (uint32_t m = 0; m < config.n_mels; ++m) {
    const double lower = edges_hz[m], centre = edges_hz[m + 1], upper = edges_hz[m + 2];
    const double norm = 2.0 / (upper - lower);
    MelBand& band = extractor->bands_[m];
    band.first_bin = bins;
    for (uint32_t k = 0; k < bins; ++k) {
      const double rising = (bin_hz[k] - lower) / (centre - lower);
      const double falling = (upper - bin_hz[k]) / (upper - centre);
      const double weight = std::max(0.0, std::min(rising, falling)) * norm;
      extractor->mel_filters_[size_t{m} * bins + k] = weight;
      if (weight > 0.0) {
        band.first_bin = std::min(band.first_bin, k);
        band.last_bin = k + 1;
      }
    }
    if (band.first_bin > band.last_bin) band.first_bin = band.last_bin;  // an empty band
  }

  std::vector<double> in(n_fft);
  std::vector<std::complex<double>> out(bins);
  {
    std::lock_guard lock(PlannerMutex());
    extractor->plan_ = fftw_plan_dft_r2c_1d(static_cast<int>(n_fft), in.data(),
                                            reinterpret_cast<fftw_complex*>(out.data()),
                                            FFTW_ESTIMATE | FFTW_UNALIGNED | FFTW_PRESERVE_INPUT);
  }
  if (extractor->plan_ == nullptr) {
    return Status::Internal("log-mel: FFTW cannot plan a real FFT of {} points", n_fft);
  }
  return std::shared_ptr<const LogMelExtractor>(std::move(extractor));
}

Result<std::shared_ptr<const LogMelExtractor>> LogMelExtractor::ForConfig(
    const LogMelConfig& config) {
  static std::mutex mutex;
  static std::vector<std::shared_ptr<const LogMelExtractor>> cache;
  std::lock_guard lock(mutex);
  for (const auto& extractor : cache) {
    if (extractor->config() == config) return extractor;
  }
  MMPT_ASSIGN_OR_RETURN(auto extractor, Create(config));
  cache.push_back(extractor);
  return extractor;
}

Result<LogMelFeatures> LogMelExtractor::Extract(std::span<const float> pcm, uint32_t frames) const {
  LogMelFeatures features;
  features.n_mels = config_.n_mels;
  // More than the window's frames: one past them at most, for ExtractInto to refuse.
  features.frames = frames == 0 ? config_.Frames() : std::min(frames, config_.Frames() + 1);
  features.input_features.resize(size_t{features.n_mels} * features.frames);
  features.attention_mask.resize(features.frames);
  MMPT_ASSIGN_OR_RETURN(features.valid_frames,
                        ExtractInto(pcm, features.input_features, features.attention_mask));
  features.tokens = AudioTokens(config_.tokens, features.valid_frames);
  return features;
}

Result<uint32_t> LogMelExtractor::ExtractInto(std::span<const float> pcm,
                                              std::span<float> input_features,
                                              std::span<int32_t> attention_mask) const {
  const uint32_t n_fft = config_.n_fft, hop = config_.hop, n_mels = config_.n_mels;
  const uint32_t window_frames = config_.Frames();
  const size_t kept = attention_mask.size();
  if (kept == 0 || kept > window_frames || input_features.size() != size_t{n_mels} * kept) {
    return Status::InvalidArgument(
        "log-mel: output of {} features and {} mask entries, expected {} × F and F for F in "
        "1..{}",
        input_features.size(), attention_mask.size(), n_mels, window_frames);
  }
  const auto frames = static_cast<uint32_t>(kept);
  if (pcm.empty()) return Status::InvalidArgument("log-mel: the audio has no samples");
  const uint64_t window_samples = config_.WindowSamples();
  const size_t used = static_cast<size_t>(std::min<uint64_t>(pcm.size(), window_samples));
  for (size_t i = 0; i < used; ++i) {
    if (!std::isfinite(pcm[i])) {
      return Status::InvalidArgument("log-mel: sample {} of {} is not finite ({})", i, pcm.size(),
                                     pcm[i]);
    }
  }

  const uint32_t bins = n_fft / 2 + 1;
  const int64_t half = n_fft / 2;
  const bool to_clip = config_.padding == ClipPadding::kClip;
  // The signal the STFT reflects at its end: the window (zero-padded), or the clip itself.
  const int64_t last = static_cast<int64_t>(to_clip ? used : window_samples) - 1;
  const auto audio_end = static_cast<int64_t>(used);

  const uint32_t valid_frames = ValidFrames(config_, used);
  const uint32_t marked = std::min(valid_frames, frames);
  std::fill(attention_mask.begin(), attention_mask.begin() + marked, 1);
  std::fill(attention_mask.begin() + marked, attention_mask.end(), 0);
  // Frames from `audible_end` on are the floor, where the maximum starts. Padded to the window,
  // they see only zero padding (so does the window's reflected end, unless the audio comes
  // within a frame of it); the frames before are computed, kept or not: those straddling the
  // clip's end count towards the maximum. Padded to the clip, the reference has only the
  // valid frames; the kept ones past them are masked padding, the floor.
  const uint32_t audible_end =
      to_clip ? valid_frames
      : used + n_fft > window_samples
          ? window_frames
          : std::min<uint32_t>(window_frames,
                               static_cast<uint32_t>((audio_end - 1 + half) / hop + 1));

  Scratch& scratch = ThreadScratch(n_fft);
  auto plan = static_cast<fftw_plan>(plan_);
  auto* spectrum = reinterpret_cast<fftw_complex*>(scratch.spectrum.data());
  float* out = input_features.data();
  const auto kFloorLog = static_cast<float>(std::log10(kPowerFloor));
  float max_log = kFloorLog;
  for (uint32_t t = 0; t < std::max(frames, audible_end); ++t) {
    const bool keep = t < frames;
    // The window-length signal zero-padded from `used`, reflected (without repeating the edge
    // sample) by n_fft / 2 at both ends, as torch.stft(center=True) pads.
    const int64_t start = int64_t{t} * hop - half;
    bool silent = t >= audible_end;
    if (!silent && start >= 0 && start + n_fft <= audio_end) {
      // Inside the audio (most frames): no reflection, no padding, a loop the compiler
      // vectorizes. A silent stretch here still goes through the FFT, to the same zeros.
      const float* samples = pcm.data() + start;
      for (uint32_t n = 0; n < n_fft; ++n) scratch.frame[n] = samples[n] * window_[n];
    } else if (silent || (start >= audio_end && start + n_fft - 1 <= last)) {
      silent = true;  // past the audible frames, or the audio and the reflected end: padding
    } else {
      silent = true;
      for (uint32_t n = 0; n < n_fft; ++n) {
        const int64_t j = Reflect(start + n, last);
        const double sample = j < audio_end ? pcm[static_cast<size_t>(j)] : 0.0;
        silent = silent && sample == 0.0;
        scratch.frame[n] = sample * window_[n];
      }
    }
    if (silent) {
      // Zero in, zero power out: every band sits at the floor, no FFT needed.
      for (uint32_t m = 0; keep && m < n_mels; ++m) out[size_t{m} * frames + t] = kFloorLog;
      continue;
    }
    fftw_execute_dft_r2c(plan, scratch.frame.data(), spectrum);
    for (uint32_t k = 0; k < bins; ++k) scratch.power[k] = std::norm(scratch.spectrum[k]);
    for (uint32_t m = 0; m < n_mels; ++m) {
      const MelBand& band = bands_[m];
      const double* weights = &mel_filters_[size_t{m} * bins];
      double mel_power = 0.0;
      for (uint32_t k = band.first_bin; k < band.last_bin; ++k) {
        mel_power += weights[k] * scratch.power[k];
      }
      // In float: half the cost of log10 in double, and 1e-7 is far within the 1e-4 contract.
      const float log_power = std::log10(static_cast<float>(std::max(mel_power, kPowerFloor)));
      max_log = std::max(max_log, log_power);
      if (keep) out[size_t{m} * frames + t] = log_power;
    }
  }

  // Floor at the clip's maximum − 8 (over the padded window, padding included), then rescale.
  const float floor = max_log - static_cast<float>(kDynamicRange);
  for (float& value : input_features) value = (std::max(value, floor) + 4.0f) / 4.0f;
  return valid_frames;
}

Result<LogMelFeatures> LogMel(std::span<const float> pcm, const LogMelConfig& config,
                              uint32_t frames) {
  MMPT_ASSIGN_OR_RETURN(auto extractor, LogMelExtractor::ForConfig(config));
  return extractor->Extract(pcm, frames);
}

}  // namespace mmpt::media
