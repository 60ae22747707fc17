#pragma once

// The Omni models' tokenizers for synthesized audio corpora. Qwen2.5-Omni and Qwen3-Omni share
// Qwen2's and Qwen3's vocabulary and merges: Qwen2.5-Omni names some of their added tokens
// otherwise, Qwen3-Omni adds its audio tokens after Qwen3's. None of the registries mmpt
// installs from has their tokenizer.json, so `mmpt synth` writes them from the default
// tokenizer for corpora with speech (presets/chat/qwen_omni.json and qwen3_omni.json render
// with them).

#include <string>

#include "mmpt/core/status.h"

namespace mmpt::corpora {

/// Which Omni model's added tokens to write.
enum class OmniModel {
  /// Qwen2.5-Omni: the added tokens at ids 151646–151656 renamed: <|AUDIO|>, <|audio_bos|>,
  /// <|audio_eos|> (151646–151648), <|vision_bos|>, <|vision_eos|> (151652, 151653),
  /// <|IMAGE|>, <|VIDEO|> (151655, 151656).
  kQwen25Omni,
  /// Qwen3-Omni: Qwen3's added tokens kept and <|audio_start|> (151669), <|audio_end|>
  /// (151670) and <|audio_pad|> (151675) added, the ids of its config.json.
  kQwen3Omni,
};

/// Write to `out_path` the tokenizer.json `base_path` (a Qwen2 or Qwen3 tokenizer.json; a
/// Qwen3 one, up to id 151668, for kQwen3Omni) with `model`'s added tokens. Everything else is
/// kept byte for byte. Errors: those of reading and writing; InvalidArgument when `base_path`
/// does not hold each renamed token exactly once, already holds a token to add, or when the
/// result does not give each Omni token its id.
Status WriteOmniTokenizer(const std::string& base_path, const std::string& out_path,
                          OmniModel model);

}  // namespace mmpt::corpora
