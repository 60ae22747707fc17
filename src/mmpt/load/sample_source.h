#pragma once

// Where the loader gets a planned sample's tokens and pixels: the interface between the
// pipeline (loader.h) and the dataset reader (dataset_source.h), so the pipeline can be driven
// by any source, including fault-injecting ones in tests.

#include <span>

#include "mmpt/core/status.h"
#include "mmpt/load/rendered_sample.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::load {

/// The log-mel features a source's audio clips become: mel bins, and the frames every clip is
/// padded to (the audio preset's window when its encoder runs over all of it; 0: each batch
/// pads to its longest clip). {0, 0}: the source loads no audio.
struct AudioFeatureShape {
  uint32_t mel_bins = 0;
  uint32_t window_frames = 0;
};

/// Turns planned samples into token sequences and their images into pixel values.
/// Thread safety: both methods are called concurrently from the loader's workers.
class SampleSource {
 public:
  virtual ~SampleSource() = default;

  /// Render planned sample `sequence` of `plan` (its images: plan.Images(sequence)) into
  /// exactly `sequence.tokens` tokens, checking that whatever this rank may later need of it
  /// (token ids, media bytes, their checksums) is readable and intact — the same verdict on
  /// every rank, since a bad sample must be dropped by every CP rank alike. Errors name the
  /// file and the sample: NotFound/IOError (missing shard), Corrupt (bad bytes or checksum),
  /// Internal (the sample does not render to the planned length).
  virtual Result<RenderedSample> Render(const plan::StepPlan& plan,
                                        const plan::PlannedSequence& sequence) const = 0;

  /// Decode and preprocess vision item `image` (an image or a video) of `sample` into `out`
  /// (grid patches × patch_dim).
  /// Errors: those of decoding (Corrupt, InvalidArgument), naming the sample.
  virtual Status FillPixels(const RenderedSample& sample, const RenderedVisual& image,
                            std::span<float> out) const = 0;

  /// Decode audio clip `audio` of `sample` and write its log-mel features: `features` holds
  /// mel_bins × `frames` floats (mel bin, then frame; frames ≥ audio.valid_frames, the clip's
  /// frames then padding) and `mask` `frames` entries (1 on the clip's frames).
  /// Errors: those of decoding (Corrupt, InvalidArgument), naming the sample; InvalidArgument
  /// from a source that loads no audio (the default).
  virtual Status FillAudio(const RenderedSample& sample, const RenderedAudio& audio,
                           uint32_t frames, std::span<float> features,
                           std::span<int32_t> mask) const {
    (void)sample, (void)audio, (void)frames, (void)features, (void)mask;
    return Status::InvalidArgument("this sample source loads no audio");
  }
  /// What FillAudio writes ({0, 0} by default: no audio).
  virtual AudioFeatureShape audio_features() const { return {}; }

  /// Floats per patch row that FillPixels writes (3 · temporal patch · patch²).
  virtual uint32_t patch_dim() const = 0;
  /// The encoder's spatial merge: an image's LLM tokens are its patches / merge².
  virtual uint32_t merge_size() const = 0;
  /// A video's M-RoPE time alignment (cost::VisionConfig::tokens_per_second; 0: none).
  virtual float tokens_per_second() const = 0;
};

}  // namespace mmpt::load
