#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/core/thread_pool.h"
#include "mmpt/cost/audio_model.h"
#include "mmpt/cost/llm_model.h"
#include "mmpt/cost/presets.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/cost/vision_model.h"

namespace mmpt::cost {

/// Seconds of training compute for samples and packs on one GPU: a vision encoder (images and
/// videos), optionally an audio encoder, an LLM and a GPU. A pack's cost is a vector (seconds
/// per encoder, LLM); each is a sum over its samples, plus the padding's linear cost in the LLM
/// when packs are padded to the sequence length.
/// Thread safety: immutable after construction; safe to share.
class CostModel {
 public:
  CostModel(VisionConfig vision, LlmConfig llm, HardwareConfig hardware, bool pad_to_seq_len = true,
            std::optional<AudioConfig> audio = std::nullopt);
  /// Load the presets by name (an empty `audio`: no audio encoder). Errors: those of
  /// LoadVisionPreset and friends.
  static Result<CostModel> FromPresets(std::string_view vision, std::string_view llm,
                                       std::string_view hardware,
                                       std::string_view audio = Defaults::kAudio);

  /// What one image becomes and costs. Errors: as CostImage.
  Result<ImageCost> Image(uint32_t height, uint32_t width) const {
    return CostImage(vision_, height, width, llm_.hidden);
  }
  /// What one video becomes and costs. Errors: as CostVideo.
  Result<VideoCost> Video(const VideoItem& video) const {
    return CostVideo(vision_, video.width, video.height, video.frames, video.fps_milli, llm_.hidden,
                     video.groups);
  }
  /// What one audio clip becomes and costs; a sound track's later part (AudioItem::
  /// track_offset) takes the track's frames and tokens through its end less those before it.
  /// Errors: as CostAudio; InvalidArgument when the model has no audio encoder.
  Result<AudioCost> Audio(const AudioItem& audio) const;
  /// Seconds of `train_flops` in an encoder (vision or audio: both run at the vision MFU).
  double VisionSeconds(double train_flops) const { return hardware_.VisionSeconds(train_flops); }
  /// LLM seconds of one sub-sequence of `tokens` tokens: linear layers + causal attention.
  double SequenceLlmSeconds(uint32_t tokens) const {
    double l = tokens;
    return linear_seconds_per_token_ * l + attention_seconds_per_pair_ * l * (l + 1.0) / 2.0;
  }
  /// LLM seconds of one causal attention (query, key) pair over one token's linear-layer
  /// seconds (the hardware's attention_mfu may differ from its mfu): how a pack's LLM work
  /// splits over CP shards by tokens and pairs (cp::PackRankLoads).
  double AttentionPairWeight() const {
    return linear_seconds_per_token_ > 0 ? attention_seconds_per_pair_ / linear_seconds_per_token_
                                         : 0.0;
  }
  /// LLM seconds spent on `tokens` padding tokens (linear layers only; 0 if packs are unpadded).
  double PaddingLlmSeconds(uint32_t tokens) const {
    return pad_to_seq_len_ ? linear_seconds_per_token_ * tokens : 0.0;
  }

  const VisionConfig& vision() const { return vision_; }
  const LlmConfig& llm() const { return llm_; }
  const HardwareConfig& hardware() const { return hardware_; }
  const std::optional<AudioConfig>& audio() const { return audio_; }

 private:
  VisionConfig vision_;
  std::optional<AudioConfig> audio_;
  LlmConfig llm_;
  HardwareConfig hardware_;
  bool pad_to_seq_len_;
  double linear_seconds_per_token_;
  double attention_seconds_per_pair_;  // per (query, key) pair of causal attention
};

/// One sample's costs under a CostModel (CostSample): LLM tokens per modality and seconds per
/// encoder.
struct SampleCost {
  uint32_t image_tokens = 0;
  uint32_t video_tokens = 0;
  uint32_t audio_tokens = 0;
  double vision_seconds = 0;  // Σ vision encoder seconds (images, then videos)
  double audio_seconds = 0;   // Σ audio encoder seconds
  uint32_t MediaTokens() const { return image_tokens + video_tokens + audio_tokens; }
};

/// What each media item of one sample becomes and costs, in the table's item order, with the
/// sample's items themselves.
struct ItemCosts {
  RowItems row;
  std::vector<ImageCost> images;
  std::vector<VideoCost> videos;
  std::vector<AudioCost> audios;
  void Clear();
};

/// Cost sample `row` of `table`, and each of its items into `items` when given (reusing its
/// capacity): the one rule every cost of a sample follows, computed when the sample is needed
/// (the planner costs what it draws). The row is checked first (SampleTable::CheckRow: Corrupt
/// naming the table's file and the sample). Errors: InvalidArgument naming the source, the sample
/// index and the item the vision rule rejects (zero side, extreme aspect ratio, too few frames)
/// or the audio clip the model cannot cost, or media tokens that overflow 32 bits.
Result<SampleCost> CostSample(const SampleTable& table, const CostModel& model, uint64_t row,
                              ItemCosts* items = nullptr);

/// Per-sample costs of a whole SampleTable under one CostModel (CostSample for every row), for
/// what reads every sample (reports, the simulator's corpus figures; the planner costs only what
/// it draws): LLM
/// tokens per modality and seconds per encoder. The video and audio vectors are empty when the
/// table has no videos (audio clips).
struct CostedSamples {
  std::vector<uint32_t> image_tokens;  // per sample: Σ LLM tokens of its images
  std::vector<uint32_t> video_tokens;  // per sample: Σ LLM tokens of its videos
  std::vector<uint32_t> audio_tokens;  // per sample: Σ LLM tokens of its audio clips
  std::vector<double> vision_seconds;  // per sample: Σ vision encoder seconds (images + videos)
  std::vector<double> audio_seconds;   // per sample: Σ audio encoder seconds
  std::vector<ImageCost> images;       // per image, indexed like SampleTable::images
  std::vector<VideoCost> videos;       // per video, indexed like SampleTable::videos
  std::vector<AudioCost> audios;       // per clip, indexed like SampleTable::audios

  /// LLM tokens of all of sample `row`'s media.
  uint32_t MediaTokens(uint64_t row) const {
    return image_tokens[row] + (video_tokens.empty() ? 0 : video_tokens[row]) +
           (audio_tokens.empty() ? 0 : audio_tokens[row]);
  }
  double AudioSeconds(uint64_t row) const {
    return audio_seconds.empty() ? 0.0 : audio_seconds[row];
  }
};

/// Cost every sample and image of `table`, on `pool`'s threads if given (the result does not
/// depend on the thread count). Errors: InvalidArgument naming the source, the sample index and
/// the item of the first image or video (in table order) the vision rule rejects (zero side,
/// extreme aspect ratio, too few frames) or audio clip the model cannot cost, or a sample whose
/// media tokens overflow 32 bits.
Result<CostedSamples> CostSamples(const SampleTable& table, const CostModel& model,
                                  ThreadPool* pool = nullptr);

}  // namespace mmpt::cost
