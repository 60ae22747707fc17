#pragma once

#include <memory>
#include <string>

#include "mmpt/core/status.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::text {

/// Load a SentencePiece `.model` (through Debian's libsentencepiece) behind the Tokenizer
/// interface. Encode never adds BOS/EOS. Errors: NotFound, Corrupt (not a SentencePiece model).
Result<std::unique_ptr<Tokenizer>> LoadSentencePieceTokenizer(const std::string& path);

}  // namespace mmpt::text
