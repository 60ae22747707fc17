#pragma once

// The options `mmpt` commands share, each with one name, help text and default, declared by the
// functions below so every command spells and documents them the same way. Defaults come from
// the library's one table: plan::Layout for the layout, cost::Defaults for the presets.

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

#include "mmpt/core/status.h"
#include "mmpt/cost/cost_model.h"
#include "mmpt/cost/presets.h"
#include "mmpt/plan/step_plan.h"

namespace mmpt::cli {

/// `--dp --tp --pp --cp --ep --ga --mbs --seq-len --sync`: the cluster layout.
struct LayoutOptions {
  plan::Layout layout;
  std::string sync{plan::SyncModelName(plan::Layout{}.sync)};

  /// Declare the options on `app`.
  void Add(CLI::App& app);
  /// The layout, with --sync parsed. Errors: InvalidArgument for an unknown sync model or a
  /// layout plan::Layout::Validate rejects.
  Result<plan::Layout> Get() const;
};

/// `--vision --llm --hardware --audio`: the cost presets. The vision and audio presets of a
/// prepared dataset are the ones its manifest records, and a different one is an error naming
/// both.
struct PresetOptions {
  std::string vision;  // empty: the dataset's, else cost::Defaults::kVision
  std::string llm{cost::Defaults::kLlm};
  std::string hardware{cost::Defaults::kHardware};
  std::string audio;  // empty: the dataset's, else cost::Defaults::kAudio

  /// Declare the options on `app`.
  void Add(CLI::App& app);
  /// The vision preset to use on `input`: for a prepared dataset (a directory),
  /// store::DatasetVisionPreset; for anything else (metadata JSONL, a built-in corpus: ""),
  /// --vision or the default. Errors: those of store::DatasetVisionPreset.
  Result<std::string> VisionFor(const std::string& input) const;
  /// The cost model of VisionFor(input), --llm, --hardware and the audio preset (a dataset's,
  /// as store::DatasetAudioPreset, else --audio or the default). Errors: those of VisionFor,
  /// store::DatasetAudioPreset and cost::CostModel::FromPresets.
  Result<cost::CostModel> CostModelFor(const std::string& input) const;
};

/// `--allow-repeat`: let a step hold a sample more than once (plan::PlannerConfig::allow_repeat).
void AddAllowRepeat(CLI::App& app, bool* allow_repeat);
/// `--vanilla-buffer`: samples in each vanilla rank's packing buffer
/// (plan::PlannerConfig::vanilla_buffer).
void AddVanillaBuffer(CLI::App& app, uint32_t* vanilla_buffer);
/// `dataset`: the prepared dataset directory a command works on (positional, required).
void AddDataset(CLI::App& app, std::string* dir);
/// `--threads`: worker threads, 0 (the default) for one per core.
void AddThreads(CLI::App& app, size_t* threads);
/// `--json`: print one JSON object instead of the text.
void AddJson(CLI::App& app, bool* json);

}  // namespace mmpt::cli
