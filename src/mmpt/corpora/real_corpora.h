#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/corpora/real_data.h"
#include "mmpt/cost/presets.h"
#include "mmpt/cost/sample_table.h"
#include "mmpt/text/chat_template.h"
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
  /// which the vision preset counts. With `images` > 1 the user turn holds that many images,
  /// each with its markers. Errors: the tokenizer's.
  Result<uint32_t> CaptionPairTokens(std::string_view caption, uint32_t images = 1) const;
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

/// The size of photo `j` of PhotoPosts sample `k` under `seed`: Open Images serves its photos
/// with the long side 1024 px; the short side is 768 (4:3) with probability 0.4, 683 (3:2)
/// with 0.2, else uniform in [576, 1024]; portrait with probability 1/4. Under qwen2.5-vl
/// (smart_resize to multiples of 28) a photo is 777 to 1369 tokens, 999 at 4:3.
cost::ImageSize OpenImagesPhoto(uint64_t seed, uint64_t k, uint32_t j);

/// An image-heavy corpus, each sample a large share of a pack: one sample per COCO val2017
/// caption (25,014), its user turn holding 2 to 6 photos (uniform), then the caption as the
/// assistant's turn (text counted as CaptionPairTokens with that many images). The photo count
/// and sizes (OpenImagesPhoto) are drawn per caption from `seed` with Mix64, so the corpus is
/// the same on every machine. About 1,000 tokens per photo under qwen2.5-vl: a sample is 1.6k
/// to 6.6k tokens, a fifth to four fifths of an 8192-token pack.
/// Errors: as CocoCaptionsCorpus.
Result<cost::SampleTable> PhotoPostsCorpus(const std::string& data_dir = corpora::RealDataDir(),
                                           uint64_t seed = 1,
                                           const CorpusTokenizer* tokenizer = nullptr);

/// A built-in corpus by name, with the source weights it is planned with (empty: by size).
struct BuiltinCorpus {
  cost::SampleTable table;
  std::vector<double> weights;
};
/// The names LoadBuiltinCorpus takes, for help texts.
inline constexpr std::string_view kBuiltinCorpusNames = "coco, mmc4, mix or photos";
/// `coco` (CocoCaptions), `mmc4` (Mmc4Documents), `mix` (PretrainingMix with
/// kPretrainingMixWeights) or `photos` (PhotoPosts), built from the default data directory and
/// seed. Errors: InvalidArgument for another name; those of the corpus.
Result<BuiltinCorpus> LoadBuiltinCorpus(std::string_view name);

}  // namespace mmpt::corpora
