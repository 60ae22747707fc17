#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/cost/presets.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/text/chat_template.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::corpora {

/// Corpora built from the real data under ../shared/data/real/ (see its README), for tests,
/// benchmarks, the demo and `mmpt plan --builtin`, read by text/real_data.h. Text tokens are
/// counted with a real tokenizer (CorpusTokenizer); image sizes are real where the data has them.

/// How the built-in corpora count text tokens: a real tokenizer and chat template.
/// Thread safety: const methods are safe to call concurrently.
class CorpusTokenizer {
 public:
  /// Load the tokenizer at `tokenizer_path` and the chat template `chat` (a presets/chat name
  /// or a .json path). Errors: those of text::LoadTokenizer and text::ChatTemplate::Load, and
  /// InvalidArgument if the template's image markers are not single tokens of the tokenizer.
  static Result<CorpusTokenizer> Load(const std::string& tokenizer_path,
                                      std::string_view chat = cost::Defaults::kChatTemplate);
  /// The default tokenizer (text::FindTokenizer(): Qwen3's, installed by
  /// scripts/install-deps.sh) with the qwen_vl template, loaded once per process.
  /// Errors: those of FindTokenizer and Load, naming the path (run scripts/install-deps.sh).
  static Result<const CorpusTokenizer*> Default();

  /// Text tokens of a caption pair rendered through the chat template (text::ChatRenderer: a
  /// user turn holding the image and an assistant turn holding the caption, after the default
  /// system turn), as `mmpt prepare` counts a LLaVA record: every token but the image's pads,
  /// which the vision preset counts. Errors: the tokenizer's.
  Result<uint32_t> CaptionPairTokens(std::string_view caption) const;
  /// Tokens of one sentence alone. Errors: the tokenizer's.
  Result<uint32_t> TextTokens(std::string_view text) const;

  /// An interleaved document (mmc4) counts each sentence encoded on its own (TextTokens, as
  /// `mmpt prepare` stores segments), image_marker_tokens() per image and kDocumentEndTokens.
  /// Tokens an image adds besides its pads (the template's start and end markers), and a
  /// document's end marker.
  uint32_t image_marker_tokens() const { return image_marker_tokens_; }
  static constexpr uint32_t kDocumentEndTokens = 1;  // <|endoftext|>

 private:
  std::unique_ptr<text::Tokenizer> tokenizer_;
  std::unique_ptr<text::ChatRenderer> renderer_;  // borrows *tokenizer_
  uint32_t image_marker_tokens_ = 0;
};

/// COCO 2017 val caption pairs: one sample per caption (25,014), its image at its real size,
/// text counted by `tokenizer` (nullptr: CorpusTokenizer::Default()).
/// Errors: NotFound if the file or tokenizer is absent; Corrupt if the file does not parse.
Result<cost::SampleTable> CocoCaptionsCorpus(const std::string& data_dir = corpora::RealDataDir(),
                                       const CorpusTokenizer* tokenizer = nullptr);

/// mmc4 interleaved documents (107): the real sentences and image count. mmc4 records carry no
/// image sizes, so image j of document d (0-based, file order) takes the real size of COCO
/// image corpora::Mmc4CocoImage(seed, d, j) (the rule `mmpt synth --profile mmc4` uses too).
Result<cost::SampleTable> Mmc4DocumentsCorpus(const std::string& data_dir = corpora::RealDataDir(),
                                        uint64_t seed = 1,
                                        const CorpusTokenizer* tokenizer = nullptr);

/// A pretraining-like mix in four sources: `coco` caption pairs; `mmc4` interleaved documents
/// (as Mmc4Documents); `text` — every mmc4 document's text alone, as a text-only document;
/// `text-long` — 512 long text-only documents, each the concatenated text of 4 to 40 mmc4
/// documents drawn with the seed (about 1.5k to 20k tokens, so some exceed 8192 and follow the
/// over-long policy). Source weights for the mix are kPretrainingMixWeights.
Result<cost::SampleTable> PretrainingMixCorpus(const std::string& data_dir = corpora::RealDataDir(),
                                         uint64_t seed = 1,
                                         const CorpusTokenizer* tokenizer = nullptr);
/// Blend weights (per drawn sample) of PretrainingMix's sources, in source order.
inline constexpr double kPretrainingMixWeights[4] = {0.70, 0.10, 0.12, 0.08};

}  // namespace mmpt::corpora
