#pragma once

// Calibration: the cost model fitted to measured seconds, and the hardware preset it gives.
// bench/replay_step.py replays a step's batches on a device, times each, and asks this module
// for the utilizations that make the model's seconds match.

#include <span>
#include <string>
#include <string_view>

#include "mmpt/core/status.h"
#include "mmpt/cost/llm_model.h"

namespace mmpt::cost {

/// One timed batch: its measured encoder and LM seconds, and what the cost model says they take
/// at the device's peak (utilization 1): the encoder's, the LM's linear layers' and its causal
/// attention's. `hf_encoder`: the batch ran the Hugging Face-style encoder, not mmpt's native one.
struct TimedBatch {
  double vision_seconds = 0;
  double llm_seconds = 0;
  double peak_vision_seconds = 0;
  double peak_linear_seconds = 0;
  double peak_attention_seconds = 0;
  bool hf_encoder = false;
};

/// Measured over peak seconds, per part of the model: the reciprocal of its utilization.
struct Calibration {
  double vision = 0;     // mmpt's native encoder
  double vision_hf = 0;  // the Hugging Face-style encoder; 0 when none was timed
  double linear = 0;     // the LM's linear layers (a fixed cost per micro-step included)
  double attention = 0;  // the LM's causal attention (softmax and masking included)
};

/// Fit the cost model to `batches`: each encoder's factor is the ratio of its measured to its
/// peak seconds summed over its batches; the LM's two factors are the least-squares fit of its
/// measured seconds to its linear and attention peak seconds (attention runs far below a matrix
/// multiply's rate, most of all on a CPU). Batches too alike to tell the two apart (a singular or
/// non-positive fit) get one factor for both. Errors: InvalidArgument for no batch of the native
/// encoder, or a negative or non-finite figure, naming the batch.
Result<Calibration> Calibrate(std::span<const TimedBatch> batches);

/// The hardware preset of a device whose matrix-multiply peak in use is `peak_flops` and whose
/// model fits as `fit`: each utilization is 1 / its factor (at most 1), native_encoder_factor
/// the Hugging Face encoder's factor over the native one's (when timed); figures to four
/// significant digits, as the preset file holds them. `measured` says what was measured, by
/// what and when.
HardwareConfig CalibratedHardware(const Calibration& fit, double peak_flops, std::string name,
                                  std::string measured);

/// `config` as a hardware preset file holds it (ParseHardwarePreset reads it back), with
/// `comment` describing the device.
std::string HardwarePresetJson(const HardwareConfig& config, std::string_view comment);

/// Write `config` as `presets_dir`/hardware/<name>.json, atomically (LoadHardwarePreset finds it
/// when `presets_dir` is PresetDir()). Errors: InvalidArgument for a name that is not a plain
/// file name, or one that fails Validate; IOError.
Status WriteHardwarePreset(const std::string& presets_dir, const HardwareConfig& config,
                           std::string_view comment);

}  // namespace mmpt::cost
