#include "options.h"

#include <filesystem>

#include "mmpt/store/dataset_preset.h"

namespace mmpt::cli {

void LayoutOptions::Add(CLI::App& app) {
  app.add_option("--dp", layout.dp, "Data-parallel ranks")->capture_default_str();
  app.add_option("--tp", layout.tp, "Tensor-parallel size")->capture_default_str();
  app.add_option("--pp", layout.pp, "Pipeline stages")->capture_default_str();
  app.add_option("--cp", layout.cp, "Context-parallel size")->capture_default_str();
  app.add_option("--ep", layout.ep, "Expert-parallel size: DP ranks per sync group")
      ->capture_default_str();
  app.add_option("--ga", layout.ga, "Gradient-accumulation micro-steps per step")
      ->capture_default_str();
  app.add_option("--mbs", layout.mbs, "Packs per rank per micro-step")->capture_default_str();
  app.add_option("--seq-len", layout.seq_len, "Tokens per pack")->capture_default_str();
  app.add_option("--sync", sync, "Where ranks wait: step, microstep or pipeline")
      ->capture_default_str();
}

Result<plan::Layout> LayoutOptions::Get() const {
  plan::Layout parsed = layout;
  MMPT_ASSIGN_OR_RETURN(parsed.sync, plan::ParseSyncModel(sync));
  MMPT_RETURN_IF_ERROR(parsed.Validate());
  return parsed;
}

void PresetOptions::Add(CLI::App& app) {
  app.add_option("--vision", vision,
                 fmt::format("Vision preset (presets/vision); default: the one a prepared "
                             "dataset's mmpt.json records, else {}",
                             cost::Defaults::kVision));
  app.add_option("--llm", llm, "LLM preset (presets/llm)")->capture_default_str();
  app.add_option("--hardware", hardware, "Hardware preset (presets/hardware)")
      ->capture_default_str();
  app.add_option("--audio", audio,
                 fmt::format("Audio encoder preset (presets/audio), for audio clips; default: "
                             "the one a prepared dataset's mmpt.json records, else {}",
                             cost::Defaults::kAudio));
}

Result<std::string> PresetOptions::VisionFor(const std::string& input) const {
  std::error_code ec;
  if (!input.empty() && std::filesystem::is_directory(input, ec)) {
    return store::DatasetVisionPreset(input, vision);
  }
  return vision.empty() ? std::string(cost::Defaults::kVision) : vision;
}

Result<cost::CostModel> PresetOptions::CostModelFor(const std::string& input) const {
  MMPT_ASSIGN_OR_RETURN(std::string chosen, VisionFor(input));
  std::error_code ec;
  std::string audio_chosen = audio.empty() ? std::string(cost::Defaults::kAudio) : audio;
  if (!input.empty() && std::filesystem::is_directory(input, ec)) {
    MMPT_ASSIGN_OR_RETURN(audio_chosen, store::DatasetAudioPreset(input, audio));
  }
  return cost::CostModel::FromPresets(chosen, llm, hardware, audio_chosen);
}

void AddAllowRepeat(CLI::App& app, bool* allow_repeat) {
  app.add_flag("--allow-repeat", *allow_repeat,
               "Let a step hold a sample more than once: for a corpus smaller than a step, or a "
               "small source weighted beyond its size. Without it a step holds each sample at "
               "most once (one drawn again waits for the next step), so the corpus must fill a "
               "step with distinct samples: one per pack at least (no pack is empty: a "
               "micro-batch needs tokens), and no source asked by its weight for more samples a "
               "step than it has; else the command stops with the numbers");
}

void AddVanillaBuffer(CLI::App& app, uint32_t* vanilla_buffer) {
  app.add_option("--vanilla-buffer", *vanilla_buffer,
                 "Vanilla: samples in each rank's packing buffer")
      ->capture_default_str();
}

void AddDataset(CLI::App& app, std::string* dir) {
  app.add_option("dataset", *dir, "Prepared dataset directory (holding mmpt.json)")->required();
}

void AddThreads(CLI::App& app, size_t* threads) {
  app.add_option("--threads", *threads, "Worker threads (0: one per core)")->capture_default_str();
}

void AddJson(CLI::App& app, bool* json) {
  app.add_flag("--json", *json, "Print one JSON object instead of the text");
}

}  // namespace mmpt::cli
