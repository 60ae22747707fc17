#include "mmpt/cost/audio_model.h"

#include <algorithm>

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
  return Status::OK();
}

Result<AudioCost> CostAudio(const AudioConfig& c, uint32_t samples, uint32_t llm_hidden) {
  if (samples == 0) return Status::InvalidArgument("audio clip of zero length");
  AudioCost cost;
  const uint64_t window = c.log_mel.Frames();
  cost.valid_frames = media::ValidFrames(c.log_mel, samples);
  cost.llm_tokens = media::AudioTokens(cost.valid_frames);
  const double mel_frames = c.pad_to_window ? static_cast<double>(window) : cost.valid_frames;
  cost.encoder_frames = static_cast<uint32_t>((static_cast<uint64_t>(mel_frames) + 1) / 2);
  const double h = c.hidden, n = cost.encoder_frames;
  // conv1 (n_mels → hidden, kernel 3) over every mel frame; conv2 (hidden → hidden, kernel 3,
  // stride 2).
  double flops = 2.0 * mel_frames * 3.0 * c.log_mel.n_mels * h + 2.0 * n * 3.0 * h * h;
  const double span = c.attention_window_frames == 0
                          ? n
                          : std::min(n, static_cast<double>(c.attention_window_frames) / 2.0);
  flops += c.layers * (2.0 * n * (4.0 * h * h + 2.0 * h * c.mlp_hidden) + 4.0 * n * span * h);
  // Pooling by 2, then the projector into the LLM.
  flops += 2.0 * (n / 2.0) * h * llm_hidden;
  cost.train_flops = 3.0 * flops;
  return cost;
}

}  // namespace mmpt::cost
