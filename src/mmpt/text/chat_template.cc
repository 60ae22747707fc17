#include "mmpt/text/chat_template.h"

#include <simdjson.h>

#include "mmpt/core/data_dir.h"
#include "mmpt/core/mapped_file.h"

namespace mmpt::text {
namespace {

Result<std::string> StringField(simdjson::dom::object obj, std::string_view key, const std::string& where) {
  std::string_view value;
  if (obj[key].get(value)) return Status::Corrupt("{}: \"{}\" must be a string", where, key);
  return std::string(value);
}

Status Append(const Tokenizer& tokenizer, std::string_view text, bool loss, RenderedConversation* out) {
  if (text.empty()) return Status::OK();
  MMPT_ASSIGN_OR_RETURN(std::vector<TokenId> ids, tokenizer.Encode(text));
  out->ids.insert(out->ids.end(), ids.begin(), ids.end());
  out->image_pad.insert(out->image_pad.end(), ids.size(), 0);
  out->loss.insert(out->loss.end(), ids.size(), loss ? 1 : 0);
  return Status::OK();
}

}  // namespace

Result<ChatTemplate> ChatTemplate::Parse(std::string_view json, const std::string& source) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(simdjson::padded_string(json)).get(root)) {
    return Status::Corrupt("{}: malformed JSON: {}", source, simdjson::error_message(error));
  }
  simdjson::dom::object top, roles, image;
  if (root.get(top)) return Status::Corrupt("{}: expected an object", source);
  ChatTemplate chat;
  MMPT_ASSIGN_OR_RETURN(chat.name, StringField(top, "name", source));
  std::string_view system;
  if (top["default_system"].get(system) == simdjson::SUCCESS) chat.default_system = std::string(system);
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
  if (top["image"].get(image)) return Status::Corrupt("{}: \"image\" must be an object", source);
  MMPT_ASSIGN_OR_RETURN(chat.image_start, StringField(image, "start", source + ": image"));
  MMPT_ASSIGN_OR_RETURN(chat.image_pad, StringField(image, "pad", source + ": image"));
  MMPT_ASSIGN_OR_RETURN(chat.image_end, StringField(image, "end", source + ": image"));
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

Result<RenderedConversation> RenderConversation(const ChatTemplate& chat, const Tokenizer& tokenizer,
                                                const std::vector<ChatTurn>& turns,
                                                const std::vector<size_t>& image_token_counts) {
  const auto pad = tokenizer.TokenToId(chat.image_pad);
  if (!pad) return Status::InvalidArgument("chat template {}: the tokenizer has no token '{}'", chat.name, chat.image_pad);
  size_t images = 0;
  for (const ChatTurn& turn : turns) {
    for (const ChatSegment& segment : turn.content) images += segment.kind == ChatSegment::Kind::kImage;
  }
  if (images != image_token_counts.size()) {
    return Status::InvalidArgument("conversation has {} images but {} image token counts were given", images,
                                   image_token_counts.size());
  }
  RenderedConversation out;
  auto render_turn = [&](const std::string& role_name, const std::vector<ChatSegment>& content) -> Status {
    auto role = chat.roles.find(role_name);
    if (role == chat.roles.end()) return Status::InvalidArgument("chat template {} has no role '{}'", chat.name, role_name);
    const bool loss = role->second.loss;
    MMPT_RETURN_IF_ERROR(Append(tokenizer, role->second.prefix, false, &out));
    for (const ChatSegment& segment : content) {
      if (segment.kind == ChatSegment::Kind::kText) {
        MMPT_RETURN_IF_ERROR(Append(tokenizer, segment.text, loss, &out));
        continue;
      }
      MMPT_RETURN_IF_ERROR(Append(tokenizer, chat.image_start, false, &out));
      const size_t count = image_token_counts[out.images++];
      out.ids.insert(out.ids.end(), count, *pad);
      out.image_pad.insert(out.image_pad.end(), count, 1);
      out.loss.insert(out.loss.end(), count, 0);
      MMPT_RETURN_IF_ERROR(Append(tokenizer, chat.image_end, false, &out));
    }
    return Append(tokenizer, role->second.suffix, loss, &out);
  };
  if (chat.default_system && (turns.empty() || turns.front().role != "system")) {
    MMPT_RETURN_IF_ERROR(render_turn("system", {ChatSegment::Text(*chat.default_system)}));
  }
  for (const ChatTurn& turn : turns) MMPT_RETURN_IF_ERROR(render_turn(turn.role, turn.content));
  return out;
}

}  // namespace mmpt::text
