#include "mmpt/store/vision_preset.h"

#include "mmpt/cost/presets.h"
#include "mmpt/store/manifest.h"

namespace mmpt::store {

Result<std::string> DatasetVisionPreset(const std::string& dataset_dir,
                                        std::string_view requested) {
  MMPT_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(dataset_dir));
  const std::string& prepared = manifest.vision_preset;
  if (requested.empty()) {
    return prepared.empty() ? std::string(cost::Defaults::kVision) : prepared;
  }
  if (!prepared.empty() && requested != prepared) {
    return Status::InvalidArgument(
        "vision preset '{}' was asked for, but {} was prepared with '{}' (its mmpt.json); image "
        "tokens differ by preset: leave the vision preset out to use '{}', or prepare the "
        "dataset again with '{}'",
        requested, dataset_dir, prepared, prepared, requested);
  }
  return std::string(requested);
}

}  // namespace mmpt::store
