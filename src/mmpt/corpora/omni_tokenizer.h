#pragma once

// Qwen2.5-Omni's tokenizer for synthesized audio corpora. Omni shares Qwen2's and Qwen3's
// vocabulary and merges, and names some of their added tokens otherwise; none of the registries
// mmpt installs from has its tokenizer.json, so `mmpt synth` writes one from the default
// tokenizer for corpora with speech (presets/chat/qwen_omni.json renders with it).

#include <string>

#include "mmpt/core/status.h"

namespace mmpt::corpora {

/// Write to `out_path` the tokenizer.json `base_path` (a Qwen2 or Qwen3 tokenizer.json) with
/// the added tokens at ids 151646–151656 named as Qwen2.5-Omni names them: <|AUDIO|>,
/// <|audio_bos|>, <|audio_eos|> (151646–151648), <|vision_bos|>, <|vision_eos|> (151652,
/// 151653), <|IMAGE|>, <|VIDEO|> (151655, 151656). Everything else is kept byte for byte.
/// Errors: those of reading and writing; InvalidArgument when `base_path` does not hold each
/// renamed token exactly once, or when the result does not give each Omni token its id.
Status WriteOmniTokenizer(const std::string& base_path, const std::string& out_path);

}  // namespace mmpt::corpora
