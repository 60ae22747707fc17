#pragma once

#include <cstdint>
#include <string>

#include "mmpt/core/status.h"
#include "mmpt/cost/sample_table.h"

namespace mmpt::plan {

/// Corpora built from the real data under ../shared/data/real/ (see its README), for tests,
/// benchmarks and the demo. Text token counts are cost::EstimateTextTokens of the real text
/// plus a fixed chat-template overhead; image sizes are real where the data has them.

/// The directory of the real data: MMPT_SOURCE_DIR/../shared/data/real.
std::string RealDataDir();

/// Chat-template tokens around one caption pair (user turn with the image, assistant turn with
/// the caption: role markers, newlines, vision start/end) — a Qwen-style template.
inline constexpr uint32_t kCaptionTemplateTokens = 12;
/// Template tokens around one document, and around each image inside it.
inline constexpr uint32_t kDocumentTemplateTokens = 4;
inline constexpr uint32_t kImageTemplateTokens = 2;

/// COCO 2017 val caption pairs: one sample per caption (25,014), its image at its real size.
/// Errors: NotFound if the file is absent; Corrupt if it does not parse.
Result<cost::SampleTable> CocoCaptions(const std::string& data_dir = RealDataDir());

/// mmc4 interleaved documents (107): the real sentences and image count. mmc4 records carry no
/// image sizes, so each image's size is DRAWN from a seeded distribution (long side
/// log-uniform in [300, 1500] px, aspect ratio one of 1:1, 4:3, 3:4, 3:2, 2:3, 16:9, 9:16).
Result<cost::SampleTable> Mmc4Documents(const std::string& data_dir = RealDataDir(),
                                        uint64_t seed = 1);

/// A pretraining-like mix in four sources: `coco` caption pairs; `mmc4` interleaved documents
/// (as Mmc4Documents); `text` — every mmc4 document's text alone, as a text-only document;
/// `text-long` — 512 long text-only documents, each the concatenated text of 4 to 40 mmc4
/// documents drawn with the seed (about 1.5k to 20k tokens, so some exceed 8192 and follow the
/// over-long policy). Source weights for the mix are kPretrainingMixWeights.
Result<cost::SampleTable> PretrainingMix(const std::string& data_dir = RealDataDir(),
                                         uint64_t seed = 1);
/// Blend weights (per drawn sample) of PretrainingMix's sources, in source order.
inline constexpr double kPretrainingMixWeights[4] = {0.70, 0.10, 0.12, 0.08};

}  // namespace mmpt::plan
