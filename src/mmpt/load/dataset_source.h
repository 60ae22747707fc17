#pragma once

// The SampleSource of a prepared dataset: token ids stored at prepare, media bytes read
// zero-copy from the shard zips, images decoded and preprocessed by media.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/load/sample_source.h"
#include "mmpt/media/image_preprocess.h"
#include "mmpt/store/dataset.h"

namespace mmpt::load {

/// Which tokens carry loss.
enum class LossMode : uint8_t {
  kAllText,        // every text token (plain pretraining on captions and documents)
  kAssistantOnly,  // only tokens of segments whose role is "assistant" (conversations)
};
/// "all" / "assistant".
std::string_view LossModeName(LossMode mode);
/// Parse "all" or "assistant". Errors: InvalidArgument naming the value.
Result<LossMode> ParseLossMode(std::string_view name);

struct DatasetSourceOptions {
  LossMode loss = LossMode::kAllText;
  /// Id of the image placeholder token (Qwen2/2.5/3-VL's "<|image_pad|>" is 151655).
  int32_t image_pad_token_id = 151655;
  /// Decode, resize, normalize, patchify (defaults: Qwen2-VL).
  media::ImagePreprocessConfig preprocess;
  /// Take the resize rule and patch geometry from the dataset manifest's vision preset (the
  /// one prepare checked image sizes against), when the manifest names one.
  bool resize_from_manifest = true;
  /// Check every planned image's CRC-32 against the .meta record when rendering (catches an
  /// image changed after prepare on every rank alike, before any pixel is decoded).
  bool verify_crc = true;
};

/// Renders planned samples from the dataset's stored token ids (no chat template: a sample's
/// text segments' ids, then each image's placeholders where its segment sits), so the rendered
/// length is exactly what the planner counted from `.meta`: text tokens (cut from the end when
/// the plan truncated the sample) plus the images' LLM tokens.
///
/// Samples are named as the planner names them (store::PlanningTable): source s is
/// Dataset::sources()[s], and a sample's index counts through that source's shards in manifest
/// order (Dataset::GlobalIndex).
/// Thread safety: immutable after Create; Render and FillPixels may run concurrently.
class DatasetSource final : public SampleSource {
 public:
  /// Errors: those of store::Dataset::Open.
  static Result<std::shared_ptr<DatasetSource>> Open(const std::string& dir,
                                                     DatasetSourceOptions options = {});
  static Result<std::shared_ptr<DatasetSource>> Create(
      std::shared_ptr<const store::Dataset> dataset, DatasetSourceOptions options = {});

  Result<RenderedSample> Render(const plan::StepPlan& plan,
                                const plan::PlannedSequence& sequence) const override;
  Status FillPixels(const RenderedSample& sample, const RenderedImage& image,
                    std::span<float> out) const override;
  uint32_t patch_dim() const override {
    return static_cast<uint32_t>(media::PatchDim(options_.preprocess.patch));
  }
  uint32_t merge_size() const override { return options_.preprocess.patch.merge_size; }

  const store::Dataset& dataset() const { return *dataset_; }
  const DatasetSourceOptions& options() const { return options_; }

 private:
  DatasetSource() = default;

  std::shared_ptr<const store::Dataset> dataset_;
  DatasetSourceOptions options_;
};

}  // namespace mmpt::load
