#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::text {

/// A chat format as data (presets/chat/*.json): per role the text before and after a turn's
/// content and whether the turn's tokens carry loss; how an image appears in the token stream.
struct ChatTemplate {
  struct Role {
    std::string prefix;
    std::string suffix;
    bool loss = false;  // content and suffix tokens of this role are trained on
  };
  std::string name;
  std::map<std::string, Role> roles;
  std::optional<std::string> default_system;  // a system turn added when the first turn is not one
  std::string image_start, image_pad, image_end;

  /// Parse a template JSON document; `source` names it in errors. Errors: Corrupt naming the
  /// field at fault.
  static Result<ChatTemplate> Parse(std::string_view json, const std::string& source);
  /// Read PresetDir()/chat/NAME.json (core/data_dir.h), or the file NAME when it ends in .json.
  /// Errors: NotFound, Corrupt.
  static Result<ChatTemplate> Load(const std::string& name_or_path);
};

/// One piece of a turn's content: text, or an image (its token count given to RenderConversation).
struct ChatSegment {
  enum class Kind { kText, kImage };
  Kind kind = Kind::kText;
  std::string text;
  static ChatSegment Text(std::string text) { return {Kind::kText, std::move(text)}; }
  static ChatSegment Image() { return {Kind::kImage, {}}; }
};

/// One turn of a conversation.
struct ChatTurn {
  std::string role;
  std::vector<ChatSegment> content;
};

/// A conversation as token ids, with per-position flags.
struct RenderedConversation {
  std::vector<TokenId> ids;
  std::vector<uint8_t> image_pad;  // 1 where ids[i] is an image placeholder token
  std::vector<uint8_t> loss;       // 1 where ids[i] is trained on (assistant content and suffix)
  size_t images = 0;
};

/// Render `turns` through `chat` into ids. The i-th image (in conversation order) becomes the
/// image start token, `image_token_counts[i]` pad tokens and the end token. Role prefixes,
/// each text segment and suffixes are encoded separately, so a text's first token never merges
/// with its role prefix (the labels stay exact). Errors: InvalidArgument for an unknown role, a
/// count that does not match the number of images, or a template token the tokenizer lacks;
/// the tokenizer's errors.
Result<RenderedConversation> RenderConversation(const ChatTemplate& chat, const Tokenizer& tokenizer,
                                                const std::vector<ChatTurn>& turns,
                                                const std::vector<size_t>& image_token_counts);

}  // namespace mmpt::text
