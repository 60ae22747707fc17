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

namespace {

// Cost rows [begin, end) into `out`; the first failing row's error, or OK.
Status CostRows(const SampleTable& table, const CostModel& model, uint64_t begin, uint64_t end,
                CostedSamples* out) {
  for (uint64_t row = begin; row < end; ++row) {
    uint64_t tokens = 0;
    double seconds = 0;
    for (uint64_t i = table.image_begin[row]; i < table.image_begin[row + 1]; ++i) {
      auto cost = model.Image(table.images[i].width, table.images[i].height);
      if (!cost.ok()) {
        uint32_t s = table.SourceOfRow(row);
        return cost.status().WithContext(fmt::format("source '{}' sample {} image {}",
                                                     table.source_names[s],
                                                     row - table.source_begin[s],
                                                     i - table.image_begin[row]));
      }
      out->images[i] = *cost;
      tokens += cost->llm_tokens;
      seconds += model.VisionSeconds(cost->train_flops);
    }
    if (tokens > UINT32_MAX) {
      uint32_t s = table.SourceOfRow(row);
      return Status::InvalidArgument("source '{}' sample {}: {} image tokens overflow",
                                     table.source_names[s], row - table.source_begin[s], tokens);
    }
    out->image_tokens[row] = static_cast<uint32_t>(tokens);
    out->vision_seconds[row] = seconds;
  }
  return Status::OK();
}

}  // namespace

Result<CostedSamples> CostSamples(const SampleTable& table, const CostModel& model,
                                  ThreadPool* pool) {
  CostedSamples out;
  const size_t n = table.num_samples();
  out.image_tokens.assign(n, 0);
  out.vision_seconds.assign(n, 0.0);
  out.images.resize(table.num_images());
  if (pool == nullptr || pool->size() <= 1 || n < 4096) {
    MMPT_RETURN_IF_ERROR(CostRows(table, model, 0, n, &out));
    return out;
  }
  // Fixed chunks, each writing only its own rows: the result is the same for any thread count.
  constexpr uint64_t kChunk = 4096;
  const size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<Status> status(chunks);
  pool->ParallelFor(0, chunks, [&](size_t c) {
    status[c] = CostRows(table, model, c * kChunk, std::min<uint64_t>(n, (c + 1) * kChunk), &out);
  });
  for (const Status& s : status) MMPT_RETURN_IF_ERROR(s);
  return out;
}

}  // namespace mmpt::cost
