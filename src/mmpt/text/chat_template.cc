#include "mmpt/text/chat_template.h"

#include <simdjson.h>

#include <cstdio>
#include <optional>

#include "mmpt/core/data_dir.h"
#include "mmpt/core/mapped_file.h"

namespace mmpt::text {
namespace {

Result<std::string> StringField(simdjson::dom::object obj, std::string_view key,
                                const std::string& where) {
  std::string_view value;
  if (obj[key].get(value)) return Status::Corrupt("{}: \"{}\" must be a string", where, key);
  return std::string(value);
}

Result<MediaMarkers> MarkersField(simdjson::dom::object top, std::string_view key,
                                  const std::string& source) {
  simdjson::dom::object obj;
  if (top[key].get(obj)) return Status::Corrupt("{}: \"{}\" must be an object", source, key);
  const std::string where = fmt::format("{}: {}", source, key);
  MediaMarkers markers;
  MMPT_ASSIGN_OR_RETURN(markers.start, StringField(obj, "start", where));
  MMPT_ASSIGN_OR_RETURN(markers.pad, StringField(obj, "pad", where));
  MMPT_ASSIGN_OR_RETURN(markers.end, StringField(obj, "end", where));
  return markers;
}

// Where `{:.Nf}` sits in a timestamp format, and N; nullopt when it is not there exactly once.
struct TimestampField {
  size_t at = 0, size = 0;
  int decimals = 0;
};
std::optional<TimestampField> FindTimestampField(std::string_view format) {
  const size_t at = format.find("{:.");
  if (at == std::string_view::npos || at + 6 > format.size()) return std::nullopt;
  const char digit = format[at + 3];
  if (digit < '0' || digit > '9' || format.substr(at + 4, 2) != "f}") return std::nullopt;
  if (format.find('{', at + 1) != std::string_view::npos) return std::nullopt;
  if (format.find('}') != at + 5) return std::nullopt;
  return TimestampField{at, 6, digit - '0'};
}

}  // namespace

std::string MediaMarkers::Timestamp(double seconds) const {
  const std::optional<TimestampField> field = FindTimestampField(timestamp);
  if (!field) return timestamp;  // Parse refuses such a template
  // printf's %.Nf rounds the double's exact value, ties to even, as Python's format does.
  char number[64];
  std::snprintf(number, sizeof number, "%.*f", field->decimals, seconds);
  return timestamp.substr(0, field->at) + number + timestamp.substr(field->at + field->size);
}

std::string_view PieceKindName(PieceKind kind) {
  switch (kind) {
    case PieceKind::kImage: return "image";
    case PieceKind::kVideo: return "video";
    case PieceKind::kAudio: return "audio";
    case PieceKind::kText: break;
  }
  return "text";
}

Result<ChatTemplate> ChatTemplate::Parse(std::string_view json, const std::string& source) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(simdjson::padded_string(json)).get(root)) {
    return Status::Corrupt("{}: malformed JSON: {}", source, simdjson::error_message(error));
  }
  simdjson::dom::object top, roles;
  if (root.get(top)) return Status::Corrupt("{}: expected an object", source);
  ChatTemplate chat;
  chat.json = simdjson::minify(root);
  MMPT_ASSIGN_OR_RETURN(chat.name, StringField(top, "name", source));
  std::string_view system;
  if (top["default_system"].get(system) == simdjson::SUCCESS)
    chat.default_system = std::string(system);
  if (top["roles"].get(roles)) return Status::Corrupt("{}: \"roles\" must be an object", source);
  for (auto field : roles) {
    const std::string where = fmt::format("{}: roles.{}", source, field.key);
    simdjson::dom::object role_obj;
    if (field.value.get(role_obj)) return Status::Corrupt("{}: expected an object", where);
    Role role;
    MMPT_ASSIGN_OR_RETURN(role.prefix, StringField(role_obj, "prefix", where));
    MMPT_ASSIGN_OR_RETURN(role.suffix, StringField(role_obj, "suffix", where));
    bool loss = false;
    if (auto value = role_obj["loss"]; value.error() == simdjson::SUCCESS) {
      if (value.get(loss)) return Status::Corrupt("{}: \"loss\" must be a boolean", where);
    }
    role.loss = loss;
    chat.roles.emplace(std::string(field.key), std::move(role));
  }
  MMPT_ASSIGN_OR_RETURN(chat.image, MarkersField(top, "image", source));
  for (auto [field, markers] : {std::pair{"video", &chat.video}, std::pair{"audio", &chat.audio}}) {
    if (top[field].error() != simdjson::NO_SUCH_FIELD) {
      MMPT_ASSIGN_OR_RETURN(*markers, MarkersField(top, field, source));
    }
  }
  simdjson::dom::object video;
  std::string_view timestamp;
  if (chat.video && top["video"].get(video) == simdjson::SUCCESS &&
      video["timestamp"].get(timestamp) == simdjson::SUCCESS) {
    if (!FindTimestampField(timestamp)) {
      return Status::Corrupt(
          "{}: video.timestamp '{}' must hold one {{:.Nf}} (N decimals of the group's seconds)",
          source, timestamp);
    }
    chat.video->timestamp = std::string(timestamp);
  }
  return chat;
}

Result<ChatTemplate> ChatTemplate::Load(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (!name_or_path.ends_with(".json")) {
    MMPT_ASSIGN_OR_RETURN(std::string presets, PresetDir());
    path = presets + "/chat/" + name_or_path + ".json";
  }
  MMPT_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  return Parse(contents, path);
}

// The text of consecutive pieces that the reference encodes as one string (nothing splits it),
// with the places where the target flag changes.
class ChatRenderer::Run {
 public:
  Run(const ChatRenderer& renderer, RenderedText* out) : renderer_(renderer), out_(out) {}

  // Append `text`; `fixed` is its entry when it is a template string, else null.
  Status Add(std::string_view text, bool target, const Fixed* fixed) {
    if (text.empty()) return Status::OK();
    if (split_after_ || (fixed != nullptr && fixed->splits_before)) MMPT_RETURN_IF_ERROR(Flush());
    if (marks_.empty() || marks_.back().second != target) marks_.emplace_back(text_.size(), target);
    only_ = text_.empty() ? fixed : nullptr;
    text_ += text;
    split_after_ = fixed != nullptr && fixed->splits_after;
    return Status::OK();
  }

  // Encode what was added since the last Flush and append it to the output.
  Status Flush() {
    if (text_.empty()) return Status::OK();
    const size_t base = out_->ids.size();
    if (only_ != nullptr) {
      out_->ids.insert(out_->ids.end(), only_->ids.begin(), only_->ids.end());
    } else {
      MMPT_ASSIGN_OR_RETURN(std::vector<TokenId> ids, renderer_.tokenizer_->Encode(text_));
      out_->ids.insert(out_->ids.end(), ids.begin(), ids.end());
    }
    const std::span<const TokenId> ids(out_->ids.data() + base, out_->ids.size() - base);
    out_->target.resize(out_->ids.size(), 0);
    for (size_t k = 0; k < marks_.size(); ++k) {
      if (!marks_[k].second) continue;
      MMPT_ASSIGN_OR_RETURN(size_t begin, TokensBefore(marks_[k].first, ids));
      size_t end = ids.size();
      if (k + 1 < marks_.size()) {
        MMPT_ASSIGN_OR_RETURN(end, TokensBefore(marks_[k + 1].first, ids));
      }
      std::fill(out_->target.begin() + base + begin, out_->target.begin() + base + end, 1);
    }
    text_.clear();
    marks_.clear();
    only_ = nullptr;
    split_after_ = false;
    return Status::OK();
  }

 private:
  // The tokens of the run that lie wholly before byte `offset`: the common prefix of the run's
  // ids and those of its first `offset` bytes (a token that spans `offset` is left out).
  Result<size_t> TokensBefore(size_t offset, std::span<const TokenId> ids) const {
    if (offset == 0) return size_t{0};
    const std::string_view head = std::string_view(text_).substr(0, offset);
    std::vector<TokenId> encoded;
    const Fixed* fixed = renderer_.Find(head);
    if (fixed == nullptr) {
      MMPT_ASSIGN_OR_RETURN(encoded, renderer_.tokenizer_->Encode(head));
    }
    const std::vector<TokenId>& head_ids = fixed != nullptr ? fixed->ids : encoded;
    size_t n = 0;
    while (n < head_ids.size() && n < ids.size() && head_ids[n] == ids[n]) ++n;
    return n;
  }

  const ChatRenderer& renderer_;
  RenderedText* out_;
  std::string text_;
  std::vector<std::pair<size_t, bool>> marks_;  // (byte offset, target) where the flag changes
  const Fixed* only_ = nullptr;                 // the run is this template string alone
  bool split_after_ = false;
};

Result<ChatRenderer> ChatRenderer::Create(ChatTemplate chat, const Tokenizer& tokenizer) {
  ChatRenderer renderer;
  std::vector<std::string> strings;
  for (PieceKind kind : {PieceKind::kImage, PieceKind::kVideo, PieceKind::kAudio}) {
    const MediaMarkers* markers = chat.markers(kind);
    if (markers == nullptr) continue;
    const auto pad = tokenizer.TokenToId(markers->pad);
    if (!pad) {
      return Status::InvalidArgument(
          "chat template {}: the tokenizer has no token '{}' (its {} pad): use the tokenizer "
          "of the model the template is for",
          chat.name, markers->pad, PieceKindName(kind));
    }
    renderer.pad_ids_[static_cast<size_t>(kind)] = *pad;
    strings.insert(strings.end(), {markers->start, markers->end});
  }
  for (const auto& [name, role] : chat.roles)
    strings.insert(strings.end(), {role.prefix, role.suffix});
  for (std::string& text : strings) {
    if (text.empty() || renderer.Find(text) != nullptr) continue;
    Fixed fixed;
    MMPT_ASSIGN_OR_RETURN(fixed.ids, tokenizer.Encode(text));
    fixed.splits_before = tokenizer.StartsWithAddedToken(text);
    fixed.splits_after = tokenizer.EndsWithAddedToken(text);
    fixed.text = std::move(text);
    renderer.fixed_.push_back(std::move(fixed));
  }
  renderer.chat_ = std::move(chat);
  renderer.tokenizer_ = &tokenizer;
  return renderer;
}

const ChatRenderer::Fixed* ChatRenderer::Find(std::string_view text) const {
  for (const Fixed& fixed : fixed_) {
    if (fixed.text == text) return &fixed;
  }
  return nullptr;
}

Status ChatRenderer::AddWithSoundTrack(Run& run, uint32_t items, RenderedText* out) const {
  const MediaMarkers& video = *chat_.video;  // a video piece's markers were found
  if (!chat_.audio || !video.timestamp.empty()) {
    return Status::InvalidArgument(
        "chat template {} cannot write a video with its sound track: it needs \"audio\" "
        "markers and no video timestamp",
        chat_.name);
  }
  const MediaMarkers& audio = *chat_.audio;
  MMPT_RETURN_IF_ERROR(run.Add(video.start, false, Find(video.start)));
  MMPT_RETURN_IF_ERROR(run.Add(audio.start, false, Find(audio.start)));
  MMPT_RETURN_IF_ERROR(run.Flush());
  out->media_items.push_back(items);
  out->media_positions.insert(out->media_positions.end(), items,
                              static_cast<uint32_t>(out->ids.size()));
  MMPT_RETURN_IF_ERROR(run.Add(audio.end, false, Find(audio.end)));
  return run.Add(video.end, false, Find(video.end));
}

Status ChatRenderer::Render(std::span<const ChatPiece> pieces, RenderedText* out) const {
  out->clear();
  Run run(*this, out);
  auto add_piece = [&](const ChatPiece& piece, bool target) -> Status {
    if (piece.kind == PieceKind::kText) return run.Add(piece.text, target, nullptr);
    const MediaMarkers* markers = chat_.markers(piece.kind);
    if (markers == nullptr) {
      return Status::InvalidArgument("chat template {} has no \"{}\" markers", chat_.name,
                                     PieceKindName(piece.kind));
    }
    auto add_item = [&]() -> Status {
      MMPT_RETURN_IF_ERROR(run.Add(markers->start, false, Find(markers->start)));
      MMPT_RETURN_IF_ERROR(run.Flush());
      out->media_positions.push_back(static_cast<uint32_t>(out->ids.size()));
      return run.Add(markers->end, false, Find(markers->end));
    };
    if (piece.sound_items > 0) return AddWithSoundTrack(run, piece.sound_items, out);
    if (markers->timestamp.empty()) {
      out->media_items.push_back(1);
      return add_item();
    }
    if (piece.group_seconds.empty()) {
      return Status::InvalidArgument(
          "chat template {} writes a video's groups with timestamps, "
          "but the video has no sampled groups",
          chat_.name);
    }
    out->media_items.push_back(static_cast<uint32_t>(piece.group_seconds.size()));
    for (double seconds : piece.group_seconds) {
      MMPT_RETURN_IF_ERROR(run.Add(markers->Timestamp(seconds), false, nullptr));
      MMPT_RETURN_IF_ERROR(add_item());
    }
    return Status::OK();
  };
  auto add_turn = [&](std::string_view role_name, std::span<const ChatPiece> turn) -> Status {
    if (role_name.empty()) {  // a document: its text is trained on
      for (const ChatPiece& piece : turn) MMPT_RETURN_IF_ERROR(add_piece(piece, true));
      return Status::OK();
    }
    auto role = chat_.roles.find(role_name);
    if (role == chat_.roles.end()) {
      return Status::InvalidArgument("chat template {} has no role '{}'", chat_.name, role_name);
    }
    const bool loss = role->second.loss;
    MMPT_RETURN_IF_ERROR(run.Add(role->second.prefix, false, Find(role->second.prefix)));
    for (const ChatPiece& piece : turn) MMPT_RETURN_IF_ERROR(add_piece(piece, loss));
    return run.Add(role->second.suffix, loss, Find(role->second.suffix));
  };

  if (!pieces.empty() && !pieces.front().role.empty() && pieces.front().role != "system" &&
      chat_.default_system) {
    const ChatPiece system{"system", 0, PieceKind::kText, *chat_.default_system};
    MMPT_RETURN_IF_ERROR(add_turn("system", std::span(&system, 1)));
  }
  for (size_t begin = 0; begin < pieces.size();) {
    size_t end = begin + 1;
    while (end < pieces.size() && pieces[end].role == pieces[begin].role &&
           pieces[end].turn == pieces[begin].turn) {
      ++end;
    }
    MMPT_RETURN_IF_ERROR(add_turn(pieces[begin].role, pieces.subspan(begin, end - begin)));
    begin = end;
  }
  return run.Flush();
}

}  // namespace mmpt::text
