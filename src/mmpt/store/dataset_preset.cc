#include "mmpt/store/dataset_preset.h"

#include "mmpt/cost/presets.h"
#include "mmpt/store/manifest.h"

namespace mmpt::store {

namespace {

// `requested`, else `prepared`, else `fallback`; a `requested` other than a recorded
// `prepared` is refused. `kind` ("vision", "audio") and `counts` name them in the error.
Result<std::string> Resolve(const std::string& dataset_dir, std::string_view kind,
                            std::string_view counts, const std::string& prepared,
                            std::string_view requested, std::string_view fallback) {
  if (requested.empty()) return std::string(prepared.empty() ? fallback : prepared);
  if (!prepared.empty() && requested != prepared) {
    return Status::InvalidArgument(
        "{} preset '{}' was asked for, but {} was prepared with '{}' (its mmpt.json); {} "
        "differ by preset: leave the {} preset out to use '{}', or prepare the dataset again "
        "with '{}'",
        kind, requested, dataset_dir, prepared, counts, kind, prepared, requested);
  }
  return std::string(requested);
}

}  // namespace

Result<std::string> DatasetVisionPreset(const std::string& dataset_dir, const Manifest& manifest,
                                        std::string_view requested) {
  return Resolve(dataset_dir, "vision", "image tokens", manifest.vision, requested,
                 cost::Defaults::kVision);
}

Result<std::string> DatasetAudioPreset(const std::string& dataset_dir, const Manifest& manifest,
                                       std::string_view requested) {
  return Resolve(dataset_dir, "audio", "audio tokens", manifest.audio, requested,
                 cost::Defaults::kAudio);
}

Result<std::string> DatasetVisionPreset(const std::string& dataset_dir,
                                        std::string_view requested) {
  MMPT_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(dataset_dir, ShardList::kSkip));
  return DatasetVisionPreset(dataset_dir, manifest, requested);
}

Result<std::string> DatasetAudioPreset(const std::string& dataset_dir, std::string_view requested) {
  MMPT_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(dataset_dir, ShardList::kSkip));
  return DatasetAudioPreset(dataset_dir, manifest, requested);
}

std::string RecordedAudioPreset(const Manifest& manifest) {
  return manifest.audio.empty() ? std::string(cost::Defaults::kAudio) : manifest.audio;
}

}  // namespace mmpt::store
