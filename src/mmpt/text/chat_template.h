#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/text/tokenizer.h"

namespace mmpt::text {

/// What a media piece is. Each kind has its own markers in the template.
enum class PieceKind : uint8_t { kText, kImage, kVideo, kAudio };

/// "image", "video" or "audio" (the template's field), "text" for kText.
std::string_view PieceKindName(PieceKind kind);

/// How one kind of media appears in the token stream: `start`, one `pad` per LLM token of the
/// item (the caller inserts them: their count depends on the encoder), `end`.
/// A video's markers may have a `timestamp` (Qwen3-VL: "<{:.1f} seconds>"): then each temporal
/// group of the video is an item of its own, written as the timestamp with `{:.Nf}` replaced by
/// the group's time (N decimals, rounded as Python's format does) and the group's start, pads
/// and end.
struct MediaMarkers {
  std::string start, pad, end;
  std::string timestamp;  // video only; empty: a video is one item

  /// The timestamp text for `seconds`. Only for a non-empty, parsed `timestamp`.
  std::string Timestamp(double seconds) const;
};

/// A chat format as data (presets/chat/*.json): per role the text before and after a turn's
/// content and whether the turn's tokens carry loss; how an image and a video appear in the
/// token stream, and an audio clip when the template has "audio".
struct ChatTemplate {
  struct Role {
    std::string prefix;
    std::string suffix;
    bool loss = false;  // content and suffix tokens of this role are trained on
  };
  std::string name;
  std::map<std::string, Role, std::less<>> roles;
  std::optional<std::string> default_system;  // a system turn added when the first turn is not one
  MediaMarkers image;
  std::optional<MediaMarkers> video;  // a template without "video" renders no video
  std::optional<MediaMarkers> audio;  // a template without "audio" renders no audio
  std::string json;  // the document it was parsed from, as a dataset's manifest records it

  /// The markers of a media kind, or null (kText, or a kind the template lacks).
  const MediaMarkers* markers(PieceKind kind) const {
    if (kind == PieceKind::kImage) return &image;
    const std::optional<MediaMarkers>& m = kind == PieceKind::kVideo ? video : audio;
    return kind != PieceKind::kText && m ? &*m : nullptr;
  }

  /// Parse a template JSON document; `source` names it in errors. Errors: Corrupt naming the
  /// field at fault.
  static Result<ChatTemplate> Parse(std::string_view json, const std::string& source);
  /// Read PresetDir()/chat/NAME.json (core/data_dir.h), or the file NAME when it ends in .json.
  /// Errors: NotFound, Corrupt.
  static Result<ChatTemplate> Load(const std::string& name_or_path);
};

/// One piece of a sample in render order: a text or a media item, in turn `turn` of role
/// `role`. A plain document (mmc4, OBELICS) has role "" and no turns.
struct ChatPiece {
  std::string_view role;
  uint32_t turn = 0;
  PieceKind kind = PieceKind::kText;
  std::string_view text;  // when kind is kText
  /// A video under markers with a timestamp: the time of each of its temporal groups
  /// (media::VideoSampling::GroupSeconds), each group one item. Ignored otherwise.
  std::span<const double> group_seconds = {};
  /// A video with its sound track (audio in video): its items (its temporal groups and the
  /// track's parts, interleaved by the caller), all between the video's start marker and the
  /// audio's, and the audio's end marker and the video's (Qwen2.5-Omni: <|vision_bos|>
  /// <|audio_bos|> ... <|audio_eos|><|vision_eos|>). 0: none. Only without timestamps.
  uint32_t sound_items = 0;
};

/// A sample as the LLM sees it, media pads left out: its text token ids, which of them are
/// targets, and where each media item's pad tokens go.
struct RenderedText {
  std::vector<TokenId> ids;
  /// 1 where ids[i] is trained on when only targets are: the content and suffix of a role with
  /// "loss" (the assistant's), and a document's text. Never a role prefix or a media marker.
  std::vector<uint8_t> target;
  /// Per media item, in piece order: the number of ids before its pads (its pads go between
  /// its kind's start and end markers). A video under timestamps has one item per group.
  std::vector<uint32_t> media_positions;
  /// Per media piece: its items in media_positions (a video under timestamps: its groups; 1
  /// otherwise).
  std::vector<uint32_t> media_items;

  void clear() {
    ids.clear();
    target.clear();
    media_positions.clear();
    media_items.clear();
  }
};

/// Renders samples through a chat template into exactly the ids Hugging Face's processor gives
/// for the same conversation or document (`apply_chat_template`, then each image pad expanded):
/// - a conversation (pieces with a role) gets the template's default system turn unless its
///   first turn is a system turn; each turn is the role's prefix, its pieces and the suffix;
/// - a document (role "") is its texts, with no roles;
/// - a media item is its kind's start marker, its pads (left to the caller: they depend on the
///   encoder) and end marker; under a video timestamp, each temporal group is one such item
///   after its timestamp text, which is encoded with the text before it (never a target); a
///   video with its sound track is its `sound_items` items between both kinds' markers.
/// Text is encoded as the reference encodes the rendered string as a whole: pieces that touch
/// (a role prefix and the content after it, adjacent texts) are encoded together, so a token
/// that merges across them is the reference's token; it belongs to the later piece (so
/// "assistant\n" + "\nYes" gives "\n\n" as a target). Text that spells a special token becomes
/// that token, as in the reference.
/// Thread safety: immutable after Create; Render may run concurrently. The tokenizer is
/// borrowed and must outlive the renderer.
class ChatRenderer {
 public:
  /// Errors: InvalidArgument when the tokenizer lacks a pad token of the template (image, and
  /// video and audio when the template has them), naming the token; the tokenizer's errors.
  static Result<ChatRenderer> Create(ChatTemplate chat, const Tokenizer& tokenizer);

  /// Render `pieces` into `out` (cleared first). Errors: InvalidArgument naming a role or a
  /// media kind the template lacks (a video with its sound track needs "audio" markers, and
  /// no video timestamp); the tokenizer's errors.
  Status Render(std::span<const ChatPiece> pieces, RenderedText* out) const;

  const ChatTemplate& chat() const { return chat_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  /// The id of the pad token of a media kind (0 for kText, or for a kind the template lacks).
  TokenId pad_id(PieceKind kind) const { return pad_ids_[static_cast<size_t>(kind)]; }

 private:
  // A string of the template with its ids, encoded once.
  struct Fixed {
    std::string text;
    std::vector<TokenId> ids;
    bool splits_before = false;  // begins with an added token: text before it encodes apart
    bool splits_after = false;   // ends with an added token: text after it encodes apart
  };
  class Run;

  ChatRenderer() = default;
  const Fixed* Find(std::string_view text) const;
  // A video with its sound track's `items` (ChatPiece::sound_items) between both markers.
  Status AddWithSoundTrack(Run& run, uint32_t items, RenderedText* out) const;

  ChatTemplate chat_;
  const Tokenizer* tokenizer_ = nullptr;
  std::array<TokenId, 4> pad_ids_{};  // by PieceKind
  std::vector<Fixed> fixed_;          // every role's prefix and suffix, every media start and end
};

}  // namespace mmpt::text
