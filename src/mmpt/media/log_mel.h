#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::media {

/// How an audio encoder turns a clip's unmasked mel frames into LLM tokens (AudioTokens).
enum class AudioTokenRule : uint8_t {
  /// Qwen2-Audio, Qwen2.5-Omni: a stride-2 convolution, then average pooling by 2 (25 a second).
  kConvThenPool,
  /// Qwen3-Omni: the frames in chunks of 100, each through three stride-2 convolutions (13 a
  /// full chunk, 13 a second).
  kChunkedConv,
};

/// How the processor pads a clip and what of it reaches the encoder: the one rule that decides
/// a clip's valid frames (ValidFrames), the frames the encoder runs over (cost::CostAudio) and
/// the features' width in a batch (the loader).
enum class ClipPadding : uint8_t {
  /// padding="max_length", and the encoder runs over the whole window, padding included
  /// (Whisper, Qwen2-Audio); a frame counts when its first sample is audio: ⌈samples / hop⌉.
  kWindow,
  /// padding="max_length", and the encoder runs over the clip's valid frames alone, by the
  /// attention mask (Qwen2.5-Omni); valid frames as kWindow's.
  kWindowMasked,
  /// padding=True, one clip a call (Qwen3-Omni): the clip is padded to its own length, and
  /// Hugging Face drops the mask's last entry when that is not whole hops: ⌊samples / hop⌋.
  kClip,
};
/// "window", "window-masked", "clip" (the presets' spelling), and back. Errors: InvalidArgument
/// naming the value.
std::string_view ClipPaddingName(ClipPadding padding);
Result<ClipPadding> ParseClipPadding(std::string_view name);
/// "conv-then-pool", "chunked-conv", and back. Errors: InvalidArgument naming the value.
std::string_view AudioTokenRuleName(AudioTokenRule rule);
Result<AudioTokenRule> ParseAudioTokenRule(std::string_view name);

/// Parameters of a Whisper-style log-mel front end (Hugging Face's WhisperFeatureExtractor)
/// and the audio encoder's rule for its tokens; each audio preset gives them (presets/audio,
/// its "features" section: cost::LoadAudioPreset). The filter bank is always Slaney-style
/// (Slaney mel scale, Slaney area normalization) from 0 Hz to 8 kHz, as the reference
/// hard-codes it.
struct LogMelConfig {
  uint32_t sample_rate = 16000;  // Hz; input PCM must already be mono at this rate
  uint32_t n_fft = 400;          // samples per STFT frame (25 ms), Hann-windowed
  uint32_t hop = 160;            // samples between frame centres (10 ms)
  uint32_t n_mels = 128;         // mel bins (feature_size)
  uint32_t chunk_seconds = 30;   // input is zero-padded or cut to this window, in seconds
  ClipPadding padding = ClipPadding::kWindow;
  AudioTokenRule tokens = AudioTokenRule::kConvThenPool;

  /// Samples in one window: chunk_seconds × sample_rate (480,000 by default).
  uint64_t WindowSamples() const { return uint64_t{chunk_seconds} * sample_rate; }
  /// Frames in one window: WindowSamples() / hop (3,000 by default).
  uint32_t Frames() const { return static_cast<uint32_t>(WindowSamples() / hop); }
  bool operator==(const LogMelConfig&) const = default;
};

/// Mel frames of a clip of `samples` PCM samples that hold audio (the attention mask's ones),
/// as Hugging Face takes every hop-th entry of the per-sample mask: padded to the window (kWindow,
/// kWindowMasked) a frame counts when its first sample (t·hop, before centring) is audio
/// (⌈samples / hop⌉), padded to the clip (kClip) only whole hops count (⌊samples / hop⌋); at
/// most the window's frames. The one rule
/// the features (LogMelExtractor) and the plan (cost::CostAudio) share.
uint32_t ValidFrames(const LogMelConfig& config, uint64_t samples);

/// Count the audio tokens an encoder hands the LLM for `valid_frames` unmasked mel frames, as
/// its processor counts them (Python's floor division):
/// - kConvThenPool (Qwen2-Audio, Qwen2.5-Omni): a stride-2 convolution, then average pooling
///   by 2: (n − 1) / 2 + 1, then (n − 2) / 2 + 1; 25 per second of audio, 750 for a full 30 s
///   window, 0 for under 3 frames.
/// - kChunkedConv (Qwen3-Omni's _get_feat_extract_output_lengths): 13 per full chunk of 100
///   frames, and for the r = n mod 100 left, three stride-2 convolutions ((r − 1) / 2 + 1,
///   three times; 0 when r is 0): 13 per second, 3900 for 300 s, 1 for a single frame.
uint32_t AudioTokens(AudioTokenRule rule, uint32_t valid_frames);

/// The mel frames a clip's first `tokens` tokens come from, up to the next token's first frame:
/// 4·t under kConvThenPool; 100·⌊t / 13⌋ + 8·(t mod 13) under kChunkedConv (a chunk's token i
/// starts at its frame 8·i after three stride-2 convolutions). AudioTokens(rule,
/// FramesOfTokens(rule, t)) = t; a whole number of chunks (or windows of them) maps to its
/// frames exactly.
uint32_t FramesOfTokens(AudioTokenRule rule, uint32_t tokens);

/// Input features of one audio clip for a Whisper-style encoder.
struct LogMelFeatures {
  uint32_t n_mels = 0;
  uint32_t frames = 0;  // config.Frames() (the window, padded or cut) unless fewer were asked
  std::vector<float> input_features;    // n_mels × frames, row-major (mel bin, then frame)
  std::vector<int32_t> attention_mask;  // frames: 1 where the frame starts inside the audio
  uint32_t valid_frames = 0;            // the mask's sum
  uint32_t tokens = 0;                  // AudioTokens(config.tokens, valid_frames)
};

/// Computes log-mel features with one precomputed Hann window, mel filter bank and FFT plan.
/// Thread safety: immutable after Create; Extract and ExtractInto may be called from many
/// threads at once (each thread keeps a few KB of scratch between calls). Create serializes on
/// FFTW's planner, which is not thread-safe: code elsewhere in the process must not plan with
/// FFTW concurrently.
class LogMelExtractor {
 public:
  /// Prepare an extractor. Errors: InvalidArgument for a zero field, a window that is not a
  /// whole number of hops, or a frame (n_fft / 2) longer than the window; Internal if FFTW
  /// cannot plan.
  [[nodiscard]] static Result<std::shared_ptr<const LogMelExtractor>> Create(
      const LogMelConfig& config);

  /// The extractor for `config`, created on first use and shared after (a process-wide cache).
  /// Errors: as Create.
  [[nodiscard]] static Result<std::shared_ptr<const LogMelExtractor>> ForConfig(
      const LogMelConfig& config);

  ~LogMelExtractor();
  LogMelExtractor(const LogMelExtractor&) = delete;
  LogMelExtractor& operator=(const LogMelExtractor&) = delete;

  /// Extract features from mono PCM at config().sample_rate, as WhisperFeatureExtractor does
  /// with padding="max_length", truncation on and return_attention_mask: zero-pad or cut to
  /// the window; centred STFT (reflect padding) with a periodic Hann window; power spectrum;
  /// mel filter bank; log10 of at least 1e-10; floor at the clip's maximum − 8; (x + 4) / 4;
  /// the STFT's last frame dropped. Samples past the window are ignored. Under kClip
  /// (padding=True, one clip a call) the signal is the clip itself, reflected at its own end;
  /// only its valid frames exist there, so the frames after them are masked floor. `frames` > 0
  /// keeps only the window's first `frames` frames, equal to the whole window's (ExtractInto).
  /// Errors: InvalidArgument for empty input, a non-finite sample (naming its index) or
  /// `frames` above the window's.
  [[nodiscard]] Result<LogMelFeatures> Extract(std::span<const float> pcm,
                                               uint32_t frames = 0) const;

  /// As Extract, writing the window's first F frames into caller-owned memory (a batch
  /// buffer that keeps only the frames its clips need): `attention_mask` holds F entries, 1 ≤ F
  /// ≤ Frames(), and `input_features` exactly n_mels × F floats (mel bin, then frame). The
  /// values equal those of Extract's whole window, its floor included (the maximum over the
  /// window: frames past the kept ones that still see the clip are computed for it, the
  /// padding after them is the floor without an FFT). Returns the clip's valid frames (at most
  /// F of them are marked in the mask; AudioTokens gives the tokens).
  /// Errors: as Extract, plus InvalidArgument for a wrongly sized output.
  [[nodiscard]] Result<uint32_t> ExtractInto(std::span<const float> pcm,
                                             std::span<float> input_features,
                                             std::span<int32_t> attention_mask) const;

  const LogMelConfig& config() const { return config_; }
  /// The mel filter bank, n_mels × (n_fft / 2 + 1), row-major: weights on power-spectrum bins.
  std::span<const double> MelFilters() const { return mel_filters_; }

 private:
  explicit LogMelExtractor(const LogMelConfig& config);
  struct MelBand {
    uint32_t first_bin = 0;  // first bin with a nonzero weight
    uint32_t last_bin = 0;   // one past the last
  };

  LogMelConfig config_;
  std::vector<double> window_;       // n_fft
  std::vector<double> mel_filters_;  // n_mels × bins, dense, for MelFilters()
  std::vector<MelBand> bands_;       // each band's nonzero bins, so Extract skips the zeros
  void* plan_ = nullptr;             // fftw_plan (opaque here to keep fftw3.h out of users)
};

/// LogMelExtractor::ForConfig(config), then Extract(pcm, frames). Errors: as both.
[[nodiscard]] Result<LogMelFeatures> LogMel(std::span<const float> pcm, const LogMelConfig& config,
                                            uint32_t frames = 0);

}  // namespace mmpt::media
