#include "mmpt/cp/pack_load.h"

#include <algorithm>

namespace mmpt::cp {
namespace {

// Causal (query, key) pairs of query positions [begin, end) of a sequence: Σ (q + 1).
double CausalPairs(uint64_t begin, uint64_t end) {
  if (end <= begin) return 0;
  return (static_cast<double>(end) * (end + 1) - static_cast<double>(begin) * (begin + 1)) / 2;
}

}  // namespace

std::vector<RankLoad> PackRankLoads(const ThdSplit& split, const EncoderAssignment& vision,
                                    const EncoderAssignment& audio, double llm_cost,
                                    double attention_pair_weight) {
  const uint32_t cp = split.cp;
  std::vector<RankLoad> loads(cp);
  // LLM work of each rank: the real tokens of its chunks plus their weighted causal pairs.
  std::vector<double> work(cp, 0.0);
  double total_work = 0;
  for (size_t s = 0; s + 1 < split.cu_seqlens.size(); ++s) {
    const uint64_t length = split.cu_seqlens[s + 1] - split.cu_seqlens[s];
    const uint64_t chunk = split.chunk_tokens(s);
    for (uint32_t k = 0; k < 2 * cp; ++k) {
      const uint64_t begin = std::min<uint64_t>(k * chunk, length);
      const uint64_t end = std::min<uint64_t>((k + 1) * chunk, length);
      const double pairs = CausalPairs(begin, end);
      const double w = static_cast<double>(end - begin) + attention_pair_weight * pairs;
      const uint32_t r = split.ChunkRank(k);
      work[r] += w;
      loads[r].attention_pairs += pairs;
      total_work += w;
    }
  }
  for (uint32_t r = 0; r < cp; ++r) {
    loads[r].llm = total_work > 0 ? llm_cost * work[r] / total_work : 0.0;
    if (r < vision.rank_cost.size()) loads[r].vision = vision.rank_cost[r];
    if (r < audio.rank_cost.size()) loads[r].audio = audio.rank_cost[r];
  }
  return loads;
}

RankLoad MostLoaded(const std::vector<RankLoad>& loads) {
  RankLoad most;
  for (const RankLoad& l : loads) {
    most.vision = std::max(most.vision, l.vision);
    most.audio = std::max(most.audio, l.audio);
    most.llm = std::max(most.llm, l.llm);
    most.attention_pairs = std::max(most.attention_pairs, l.attention_pairs);
  }
  return most;
}

double AtomicVisionFloor(const std::vector<RankLoad>& loads, const EncoderAssignment& vision) {
  double mean = 0;
  for (const RankLoad& l : loads) mean += l.vision;
  if (!loads.empty()) mean /= static_cast<double>(loads.size());
  // lower_bound = max(Σ item / CP, largest item), and the mean is at least Σ item / CP.
  return std::max(mean, vision.lower_bound);
}

double NaiveSequenceCost(uint32_t padded_length, uint32_t cp, std::span<const CpImage> items) {
  const uint32_t chunk = cp == 0 ? 0 : padded_length / (2 * cp);
  if (chunk == 0) return 0;
  double total = 0;
  std::vector<uint8_t> on(cp);
  for (const CpImage& item : items) {
    if (item.token_count == 0) continue;
    std::fill(on.begin(), on.end(), 0);
    ForEachRun(item, [&](const TokenRun& run, uint32_t) {
      const uint32_t last = std::min((run.token_start + run.token_count - 1) / chunk, 2 * cp - 1);
      for (uint32_t k = std::min(run.token_start / chunk, 2 * cp - 1); k <= last; ++k) {
        on[k < cp ? k : 2 * cp - 1 - k] = 1;
      }
    });
    for (uint8_t o : on) total += o * item.vision_cost;
  }
  return total;
}

}  // namespace mmpt::cp
