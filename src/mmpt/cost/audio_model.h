#pragma once

#include <cstdint>
#include <string>

#include "mmpt/core/status.h"
#include "mmpt/media/audio_in_video.h"
#include "mmpt/media/log_mel.h"

namespace mmpt::cost {

/// A Whisper-style audio encoder (a preset under presets/audio/): log-mel features, a
/// convolutional front end, a transformer and a projector into the LLM. Its front end follows
/// the features' token rule (media::AudioTokenRule): kConvThenPool is two 1-D convolutions
/// over time (the second of stride 2), the transformer over the convolved frames, then average
/// pooling by 2 (Whisper, Qwen2-Audio, Qwen2.5-Omni); kChunkedConv is three 3×3 stride-2 2-D
/// convolutions of `conv_channels` channels over (mel, time) per chunk of 100 frames and a
/// linear layer into the width, the transformer over those tokens, then two linear layers
/// (Qwen3-Omni). Its LLM tokens are media::AudioTokens'.
struct AudioConfig {
  std::string name;
  /// The log-mel front end: the preset's "features" section (media::LogMelConfig's defaults
  /// where it leaves a field out). Its padding also says what the encoder runs over.
  media::LogMelConfig log_mel;
  uint32_t hidden = 0;  // encoder width (d_model)
  uint32_t layers = 0;
  uint32_t heads = 0;
  uint32_t mlp_hidden = 0;  // non-gated MLP width
  /// Mel frames per attention block (Qwen2.5-Omni: 200, i.e. n_window × 2; Qwen3-Omni: 800,
  /// n_window_infer); 0: attention spans everything the encoder sees.
  uint32_t attention_window_frames = 0;
  /// Channels of the kChunkedConv front end's convolutions (downsample_hidden_size); 0 for
  /// kConvThenPool.
  uint32_t conv_channels = 0;

  /// Errors: InvalidArgument naming the preset and the bad field.
  Status Validate() const;
};

/// What one audio clip becomes under an audio config, and what encoding it costs.
struct AudioCost {
  uint32_t valid_frames = 0;    // mel frames of the clip inside the window (the mask's sum)
  uint32_t llm_tokens = 0;      // media::AudioTokens(log_mel.tokens, valid_frames)
  uint32_t encoder_frames = 0;  // transformer sequence length (after the strided convolutions)
  double train_flops = 0;       // forward + backward (3 × forward) FLOPs of encoder + projector
};

/// Cost one clip of `samples` mono PCM samples at the feature rate (its decoded length,
/// store::MediaMeta::frames; cut to the feature window, as the features are).
/// `llm_hidden` is the projector's output width. FLOPs: the convolutions ∝ mel frames (whole
/// chunks for kChunkedConv, as the encoder pads each chunk); linear layers ∝ encoder frames;
/// attention ∝ encoder frames × the attention span.
/// Errors: InvalidArgument for a clip of no samples.
Result<AudioCost> CostAudio(const AudioConfig& config, uint32_t samples, uint32_t llm_hidden);

/// The rule a video with its sound track follows under `config`'s model (media::
/// AudioInVideoRuleOf by its preset's name) at the vision encoder's time scale
/// (`tokens_per_second`, the thinker's position_id_per_seconds). The track is planned as one
/// part per run of its tokens inside one of the encoder's attention windows, and encoded as one
/// clip per window (store::MediaMeta's kMediaSoundTrack parts, joined by
/// kMediaJoinsPreviousPart), which gives the whole track's embeddings since the encoder
/// attends within windows. Errors: InvalidArgument naming the preset when its model has no
/// such rule, its encoder attends over the whole clip, or its windows are not whole chunks
/// of the rule (Qwen2.5-Omni: the 2 s chunk is the window; Qwen3-Omni: whole 100-frame
/// convolution chunks), or `tokens_per_second` is not positive.
Result<media::AudioInVideoRule> AudioInVideoRuleOf(const AudioConfig& config,
                                                   double tokens_per_second);

}  // namespace mmpt::cost
