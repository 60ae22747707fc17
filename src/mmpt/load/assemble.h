#pragma once

// Batch assembly: the rendered samples of one micro-step's packs become the arrays of one
// (DP rank, CP rank)'s Batch. Pure computation; pixels come from a caller-supplied function.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/load/batch.h"
#include "mmpt/load/rendered_sample.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::load {

/// How packs become a Batch. The split and who encodes which image come from the plan.
struct AssembleOptions {
  uint32_t cp_rank = 0;              // this rank's place in its CP group
  bool mrope = true;                 // 3×T M-RoPE positions (Qwen-VL), else 1-D
  uint32_t merge_size = 2;           // the encoder's spatial merge (tokens = patches / merge²)
  float tokens_per_second = 0;       // video M-RoPE time alignment (cost::VisionConfig's)
  uint32_t patch_dim = 1176;         // floats per patch row (3 · temporal 2 · 14²)
  int32_t pad_token_id = 0;          // id of padding tokens (never a label)
  uint32_t mel_bins = 0;             // audio features (SampleSource::audio_features)
  uint32_t audio_window_frames = 0;  // frames every clip is padded to; 0: the longest encoded
};

/// Fill `out` (patches × patch_dim floats) with the pixel values of vision item `image` (an
/// image or a video) of `sample`, in pack slot `pack`; `image` says which item and its grid.
using PixelFiller = std::function<Status(uint32_t pack, const RenderedSample& sample,
                                         const RenderedVisual& image, std::span<float> out)>;

/// Fill the log-mel features of audio clip `audio` of `sample` (pack slot `pack`): `features`
/// mel_bins × `frames` floats, `mask` `frames` entries (SampleSource::FillAudio).
using AudioFiller =
    std::function<Status(uint32_t pack, const RenderedSample& sample, const RenderedAudio& audio,
                         uint32_t frames, std::span<float> features, std::span<int32_t> mask)>;

/// Assemble one micro-step: `packs[p]` holds the rendered samples of pack slot p, in pack
/// order, and `cps[p]` the plan's cp stage of that pack (plan/cp_stage.h): the THD split and
/// the vision assignment this function executes, never re-derives. Computes labels (next-token,
/// kIgnoreLabel where the next token has no loss or the sub-sequence ends), loss_mask,
/// positions, this rank's shard of the split, the routing (vision items under the plan's
/// `vision` assignment, audio clips under its `audio` one), and calls `fill` once for each
/// image and video this rank encodes (videos into pixel_values_videos) and `fill_audio` once
/// for each audio clip it encodes (audio tokens take text positions, as Qwen2.5-Omni's M-RoPE
/// gives clips without video). Fills every Batch field except step, micro_step, dp_rank, plan_hash
/// and dropped. Errors: InvalidArgument (inconsistent samples, e.g. an image outside its tokens or
/// a grid not divisible by merge², a CP rank outside the split, or an empty micro-step),
/// Internal (samples whose lengths or images differ from the pack's split), and whatever
/// `fill` returns (with the sample named).
Result<Batch> AssembleBatch(std::span<const std::vector<RenderedSample>> packs,
                            std::span<const plan::PackCp* const> cps,
                            const AssembleOptions& options, const PixelFiller& fill,
                            const AudioFiller& fill_audio = nullptr);

/// Check a rendered sample's invariants (see RenderedSample) against `merge_size`.
/// Errors: InvalidArgument naming the sample and image.
Status ValidateRendered(const RenderedSample& sample, uint32_t merge_size);

}  // namespace mmpt::load
