#include "mmpt/cost/audio_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "mmpt/media/audio.h"

namespace mmpt::cost {

Status AudioConfig::Validate() const {
  auto bad = [&](std::string_view field) {
    return Status::InvalidArgument("audio preset '{}': field '{}' is missing or invalid", name,
                                   field);
  };
  if (hidden == 0) return bad("encoder.hidden");
  if (layers == 0) return bad("encoder.layers");
  if (heads == 0) return bad("encoder.heads");
  if (mlp_hidden == 0) return bad("encoder.mlp_hidden");
  // Prepared clips are counted at the rate every audio encoder here takes (MediaMeta::frames).
  if (log_mel.hop == 0 || log_mel.Frames() == 0 ||
      log_mel.sample_rate != media::kAudioEncoderSampleRate) {
    return bad("features");
  }
  if ((log_mel.tokens == media::AudioTokenRule::kChunkedConv) != (conv_channels > 0)) {
    return bad("encoder.conv_channels (set for the chunked-conv tokens alone)");
  }
  return Status::OK();
}

namespace {

// What an encoder's front end hands its transformer, and the FLOPs (forward) around it.
struct Stages {
  double sequence = 0;         // transformer positions
  double attention_span = 0;   // positions each attends to
  double conv_flops = 0;       // the front end, into the transformer's width
  double projector_flops = 0;  // after the transformer, into the LLM's width
};

// kConvThenPool: conv1 (n_mels → hidden, kernel 3) over every mel frame, conv2 (hidden →
// hidden, kernel 3, stride 2); after the transformer, pooling by 2, then the projector.
Stages ConvThenPool(const AudioConfig& c, double mel_frames, uint32_t llm_hidden) {
  Stages s;
  const double h = c.hidden;
  s.sequence = std::floor((mel_frames + 1) / 2);
  s.attention_span = c.attention_window_frames == 0
                         ? s.sequence
                         : std::min(s.sequence, c.attention_window_frames / 2.0);
  s.conv_flops = 2.0 * mel_frames * 3.0 * c.log_mel.n_mels * h + 2.0 * s.sequence * 3.0 * h * h;
  s.projector_flops = 2.0 * (s.sequence / 2.0) * h * llm_hidden;
  return s;
}

// kChunkedConv: per chunk of 100 mel frames (a short last chunk padded, as the encoder batches
// them), three 3×3 stride-2 convolutions (1 → C → C → C channels) over (mel, time), then a
// linear layer from C × mel/8 to hidden per token; attention within windows of
// attention_window_frames mel frames; proj1 (hidden → hidden) and proj2 (hidden → LLM hidden).
Stages ChunkedConv(const AudioConfig& c, double mel_frames, uint32_t llm_hidden) {
  constexpr uint32_t kChunk = 100;
  const auto rule = media::AudioTokenRule::kChunkedConv;
  Stages s;
  const double h = c.hidden, channels = c.conv_channels;
  s.sequence = media::AudioTokens(rule, static_cast<uint32_t>(mel_frames));
  s.attention_span =
      c.attention_window_frames == 0
          ? s.sequence
          : std::min<double>(s.sequence, media::AudioTokens(rule, c.attention_window_frames));
  const double chunks = std::ceil(mel_frames / kChunk);
  uint32_t mels = c.log_mel.n_mels, time = kChunk, in_channels = 1;
  for (int layer = 0; layer < 3; ++layer) {
    mels = (mels + 1) / 2;
    time = (time + 1) / 2;
    s.conv_flops += chunks * 2.0 * channels * mels * time * 9.0 * in_channels;
    in_channels = c.conv_channels;
  }
  s.conv_flops += 2.0 * s.sequence * channels * mels * h;
  s.projector_flops = 2.0 * s.sequence * h * (h + llm_hidden);
  return s;
}

}  // namespace

Result<AudioCost> CostAudio(const AudioConfig& c, uint32_t samples, uint32_t llm_hidden) {
  if (samples == 0) return Status::InvalidArgument("audio clip of zero length");
  AudioCost cost;
  const uint64_t window = c.log_mel.Frames();
  cost.valid_frames = media::ValidFrames(c.log_mel, samples);
  cost.llm_tokens = media::AudioTokens(c.log_mel.tokens, cost.valid_frames);
  const double mel_frames = c.log_mel.padding == media::ClipPadding::kWindow
                                ? static_cast<double>(window)
                                : cost.valid_frames;
  const Stages s = c.log_mel.tokens == media::AudioTokenRule::kChunkedConv
                       ? ChunkedConv(c, mel_frames, llm_hidden)
                       : ConvThenPool(c, mel_frames, llm_hidden);
  cost.encoder_frames = static_cast<uint32_t>(s.sequence);
  const double h = c.hidden, n = s.sequence;
  const double flops = s.conv_flops +
                       c.layers * (2.0 * n * (4.0 * h * h + 2.0 * h * c.mlp_hidden) +
                                   4.0 * n * s.attention_span * h) +
                       s.projector_flops;
  cost.train_flops = 3.0 * flops;
  return cost;
}

Result<media::AudioInVideoRule> AudioInVideoRuleOf(const AudioConfig& config,
                                                   double tokens_per_second) {
  Result<media::AudioInVideoRule> rule =
      media::AudioInVideoRuleOf(config.name, static_cast<float>(tokens_per_second));
  if (!rule.ok()) {
    return Status::InvalidArgument("audio preset {}: {}", config.name, rule.status().message());
  }
  const uint32_t window = config.attention_window_frames;
  const media::AudioTokenRule tokens = config.log_mel.tokens;
  if (window == 0 || media::FramesOfTokens(tokens, media::AudioTokens(tokens, window)) != window) {
    return Status::InvalidArgument(
        "audio preset {}: audio in video is built for encoders that attend within windows of "
        "whole convolution chunks (Qwen2.5-Omni's 200 frames, Qwen3-Omni's 800); this one "
        "attends over {}",
        config.name,
        window == 0 ? std::string("the whole clip") : fmt::format("{} frames", window));
  }
  return rule;
}

}  // namespace mmpt::cost
