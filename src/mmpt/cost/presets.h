#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cost/audio_model.h"
#include "mmpt/cost/llm_model.h"
#include "mmpt/cost/vision_model.h"

namespace mmpt::cost {

/// Names of the presets of one kind ("vision", "audio", "llm" or "hardware") in PresetDir()
/// (core/data_dir.h), sorted; none when there is no preset directory.
std::vector<std::string> ListPresets(std::string_view kind);

/// Load the preset `name` from PresetDir()/<kind>/<name>.json. Errors: NotFound naming the
/// preset and listing the known ones, or that of PresetDir(); Corrupt or InvalidArgument
/// naming the file and field.
Result<VisionConfig> LoadVisionPreset(std::string_view name);
Result<LlmConfig> LoadLlmPreset(std::string_view name);
Result<HardwareConfig> LoadHardwarePreset(std::string_view name);
Result<AudioConfig> LoadAudioPreset(std::string_view name);

/// A vision preset by name, or from its JSON text (starting with '{') for an encoder with no
/// preset file: how the Python API takes a vision preset. Errors: those of LoadVisionPreset and
/// ParseVisionPreset.
Result<VisionConfig> VisionPresetFrom(std::string_view name_or_json);

/// Parse a preset from JSON text; `origin` names it in errors. A vision preset may name a
/// "base" vision preset: it is then that preset with its own fields merged over it (objects field
/// by field), so a variant (qwen3-vl-utils) restates only what differs. Errors: Corrupt (not
/// JSON, wrong types), InvalidArgument (missing or invalid field), NotFound (an unknown base).
Result<VisionConfig> ParseVisionPreset(std::string_view json, std::string_view origin);
Result<LlmConfig> ParseLlmPreset(std::string_view json, std::string_view origin);
Result<HardwareConfig> ParseHardwarePreset(std::string_view json, std::string_view origin);
/// An audio preset's "features" section gives the log-mel front end (n_mels, window_seconds,
/// padding: window | window-masked | clip, tokens: conv-then-pool | chunked-conv; sample_rate,
/// n_fft and hop as media::LogMelConfig's defaults when left out).
Result<AudioConfig> ParseAudioPreset(std::string_view json, std::string_view origin);

/// The one table of preset defaults: what every entry point (the `mmpt` command, the Python
/// API, the plan stream, the benchmarks, the demo) uses unless told otherwise. The seed's model:
/// Qwen2.5-VL's vision encoder with the Qwen3-30B-A3B MoE LLM, on B200s; audio (which the seed
/// has none of) through Qwen2.5-Omni's audio encoder. The layout's defaults
/// (sizes 1, 8192 tokens per pack, sync microstep) are plan::Layout's. Commands on a prepared
/// dataset take the vision preset from its manifest instead (store::DatasetVisionPreset).
struct Defaults {
  static constexpr std::string_view kVision = "qwen2.5-vl";
  static constexpr std::string_view kLlm = "qwen3-30b-a3b";
  static constexpr std::string_view kHardware = "b200";
  static constexpr std::string_view kAudio = "qwen2.5-omni";
  /// The chat template (presets/chat) `mmpt prepare` renders samples through: Qwen-VL's.
  static constexpr std::string_view kChatTemplate = "qwen_vl";
};

}  // namespace mmpt::cost
