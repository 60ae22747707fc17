#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/core/thread_pool.h"
#include "mmpt/cost/llm_model.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/cost/vision_model.h"

namespace mmpt::cost {

/// Seconds of training compute for samples and packs on one GPU: a vision encoder, an LLM and
/// a GPU. A pack's cost is the pair (vision, LLM); both are sums over its samples, plus the
/// padding's linear cost when packs are padded to the sequence length.
/// Thread safety: immutable after construction; safe to share.
class CostModel {
 public:
  CostModel(VisionConfig vision, LlmConfig llm, HardwareConfig hardware,
            bool pad_to_seq_len = true);
  /// Load the three presets by name. Errors: those of LoadVisionPreset and friends.
  static Result<CostModel> FromPresets(std::string_view vision, std::string_view llm,
                                       std::string_view hardware);

  /// What one image becomes and costs. Errors: as CostImage.
  Result<ImageCost> Image(uint32_t width, uint32_t height) const {
    return CostImage(vision_, width, height, llm_.hidden);
  }
  double VisionSeconds(double train_flops) const { return hardware_.VisionSeconds(train_flops); }
  /// LLM seconds of one sub-sequence of `tokens` tokens: linear layers + causal attention.
  double SequenceLlmSeconds(uint32_t tokens) const {
    double l = tokens;
    return linear_seconds_per_token_ * l + attention_seconds_per_pair_ * l * (l + 1.0) / 2.0;
  }
  /// LLM seconds spent on `tokens` padding tokens (linear layers only; 0 if packs are unpadded).
  double PaddingLlmSeconds(uint32_t tokens) const {
    return pad_to_seq_len_ ? linear_seconds_per_token_ * tokens : 0.0;
  }

  const VisionConfig& vision() const { return vision_; }
  const LlmConfig& llm() const { return llm_; }
  const HardwareConfig& hardware() const { return hardware_; }

 private:
  VisionConfig vision_;
  LlmConfig llm_;
  HardwareConfig hardware_;
  bool pad_to_seq_len_;
  double linear_seconds_per_token_;
  double attention_seconds_per_pair_;  // per (query, key) pair of causal attention
};

/// Per-sample costs of a SampleTable under one CostModel, computed once before planning.
struct CostedSamples {
  std::vector<uint32_t> image_tokens;    // per sample: Σ LLM tokens of its images
  std::vector<double> vision_seconds;    // per sample: Σ encoder seconds of its images
  std::vector<ImageCost> images;         // per image, indexed like SampleTable::images
};

/// Cost every sample and image of `table`, on `pool`'s threads if given (the result does not
/// depend on the thread count). Errors: InvalidArgument naming the source and the sample index
/// of the first image (in table order) the vision rule rejects (zero side, extreme aspect ratio).
Result<CostedSamples> CostSamples(const SampleTable& table, const CostModel& model,
                                  ThreadPool* pool = nullptr);

}  // namespace mmpt::cost
