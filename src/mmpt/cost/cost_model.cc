#include "mmpt/cost/cost_model.h"

#include "mmpt/cost/presets.h"

namespace mmpt::cost {

CostModel::CostModel(VisionConfig vision, LlmConfig llm, HardwareConfig hardware,
                     bool pad_to_seq_len)
    : vision_(std::move(vision)),
      llm_(std::move(llm)),
      hardware_(std::move(hardware)),
      pad_to_seq_len_(pad_to_seq_len) {
  linear_seconds_per_token_ = hardware_.LlmSeconds(llm_.LinearTrainFlopsPerToken());
  // AttentionTrainFlops(1) counts exactly one (query, key) pair.
  attention_seconds_per_pair_ = hardware_.LlmSeconds(llm_.AttentionTrainFlops(1));
}

Result<CostModel> CostModel::FromPresets(std::string_view vision, std::string_view llm,
                                         std::string_view hardware) {
  MMPT_ASSIGN_OR_RETURN(VisionConfig v, LoadVisionPreset(vision));
  MMPT_ASSIGN_OR_RETURN(LlmConfig l, LoadLlmPreset(llm));
  MMPT_ASSIGN_OR_RETURN(HardwareConfig h, LoadHardwarePreset(hardware));
  return CostModel(std::move(v), std::move(l), std::move(h));
}

Result<CostedSamples> CostSamples(const SampleTable& table, const CostModel& model) {
  CostedSamples out;
  const size_t n = table.num_samples();
  out.image_tokens.assign(n, 0);
  out.vision_seconds.assign(n, 0.0);
  out.images.resize(table.num_images());
  for (size_t s = 0; s < table.num_sources(); ++s) {
    for (uint64_t row = table.source_begin[s]; row < table.source_begin[s + 1]; ++row) {
      uint64_t tokens = 0;
      double seconds = 0;
      for (uint64_t i = table.image_begin[row]; i < table.image_begin[row + 1]; ++i) {
        auto cost = model.Image(table.images[i].width, table.images[i].height);
        if (!cost.ok()) {
          return cost.status().WithContext(fmt::format(
              "source '{}' sample {} image {}", table.source_names[s],
              row - table.source_begin[s], i - table.image_begin[row]));
        }
        out.images[i] = *cost;
        tokens += cost->llm_tokens;
        seconds += model.VisionSeconds(cost->train_flops);
      }
      if (tokens > UINT32_MAX) {
        return Status::InvalidArgument("source '{}' sample {}: {} image tokens overflow",
                                       table.source_names[s], row - table.source_begin[s], tokens);
      }
      out.image_tokens[row] = static_cast<uint32_t>(tokens);
      out.vision_seconds[row] = seconds;
    }
  }
  return out;
}

}  // namespace mmpt::cost
