#pragma once

// Which vision and audio presets a command on a dataset uses: the ones the dataset was prepared
// with, so that planning, loading and inspecting count the same image and audio tokens.

#include <string>
#include <string_view>

#include "mmpt/core/status.h"
#include "mmpt/store/manifest.h"

namespace mmpt::store {

/// The vision preset to plan or load `dataset_dir` with: `requested` when given (non-empty),
/// else the one its manifest records, else cost::Defaults::kVision (a manifest that names
/// none). Errors: those of ReadManifest; InvalidArgument when `requested` differs from the
/// manifest's preset, naming both (image tokens derive from the preset, so planning with
/// another one would disagree with what prepare checked and what the loader makes).
Result<std::string> DatasetVisionPreset(const std::string& dataset_dir, std::string_view requested);

/// The audio encoder preset of `dataset_dir`, likewise (cost::Defaults::kAudio when the
/// manifest names none): audio tokens and the loader's log-mel window derive from it.
Result<std::string> DatasetAudioPreset(const std::string& dataset_dir, std::string_view requested);

/// The two above for `dataset_dir` whose manifest is read already.
Result<std::string> DatasetVisionPreset(const std::string& dataset_dir, const Manifest& manifest,
                                        std::string_view requested);
Result<std::string> DatasetAudioPreset(const std::string& dataset_dir, const Manifest& manifest,
                                       std::string_view requested);
/// The audio encoder preset an opened dataset's `manifest` records, else cost::Defaults::kAudio
/// (what DatasetAudioPreset gives when none is requested, without reading the manifest again).
std::string RecordedAudioPreset(const Manifest& manifest);

}  // namespace mmpt::store
