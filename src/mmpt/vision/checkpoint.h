#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/mapped_file.h"
#include "mmpt/core/status.h"
#include "mmpt/vision/encoder_config.h"
#include "mmpt/vision/safetensors.h"

namespace mmpt::vision {

/// A Hugging Face checkpoint in safetensors, mapped read-only: one file, or the shards a
/// `model.safetensors.index.json` names. Move-only; entries point into the mappings.
class Checkpoint {
 public:
  /// Open `path`: a `.safetensors` file, a `*.index.json`, or a folder holding
  /// `model.safetensors` or `model.safetensors.index.json`. Errors: NotFound, IOError, Corrupt
  /// naming the file (and tensor).
  static Result<Checkpoint> Open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<TensorEntry>& tensors() const { return tensors_; }

  /// The vision tower's tensor `name` (Hugging Face's name without `visual.`), or null. A
  /// checkpoint's tower is under `visual.` (hub files), `model.visual.` (newer transformers),
  /// or, in a file holding nothing under either, at the top level.
  const TensorEntry* FindVision(std::string_view name) const;

  /// The tensors of `specs`, in their order. Errors: InvalidArgument naming the checkpoint and
  /// every missing, mis-shaped or unexpected vision tensor (a tower of another architecture or
  /// depth); tensors outside the tower (the LLM) and the rotary table are ignored.
  Result<std::vector<const TensorEntry*>> Match(const std::vector<ParameterSpec>& specs) const;

 private:
  std::string path_;
  std::vector<MappedFile> files_;
  std::vector<TensorEntry> tensors_;
  std::vector<std::string> vision_names_;  // per tensor: its name in the tower, or empty
};

}  // namespace mmpt::vision
