#include "mmpt/cost/presets.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "mmpt/core/data_dir.h"
#include "mmpt/core/mapped_file.h"

namespace mmpt::cost {
namespace {

using nlohmann::json;

Result<json> ParseJson(std::string_view text, std::string_view origin) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::Corrupt("{}: not a JSON object", origin);
  }
  return doc;
}

// Read `key` of `obj` into `out` if present; wrong types are reported, absent keys keep `out`.
template <typename T>
Status Get(const json& obj, const char* key, T* out, std::string_view origin) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::OK();
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return Status::Corrupt("{}: '{}' must be true or false", origin, key);
    *out = it->get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return Status::Corrupt("{}: '{}' must be a string", origin, key);
    *out = it->get<std::string>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!it->is_number()) return Status::Corrupt("{}: '{}' must be a number", origin, key);
    *out = it->get<double>();
  } else {
    if (!it->is_number_unsigned()) {
      return Status::Corrupt("{}: '{}' must be a non-negative integer", origin, key);
    }
    uint64_t v = it->get<uint64_t>();
    if (v > std::numeric_limits<T>::max()) {
      return Status::Corrupt("{}: '{}' = {} is out of range", origin, key, v);
    }
    *out = static_cast<T>(v);
  }
  return Status::OK();
}

// A list of layer indices below `layers` into `out`.
Status GetLayers(const json& list, const char* key, uint32_t layers, std::vector<uint32_t>* out,
                 std::string_view origin) {
  if (!list.is_array()) {
    return Status::Corrupt("{}: {} must be a list of layer indices", origin, key);
  }
  for (const json& layer : list) {
    if (!layer.is_number_unsigned() || layer.get<uint64_t>() >= layers) {
      return Status::InvalidArgument("{}: {} holds {}, not a layer index below {}", origin, key,
                                     layer.dump(), layers);
    }
    out->push_back(layer.get<uint32_t>());
  }
  return Status::OK();
}

Result<json> Section(const json& doc, const char* key, std::string_view origin) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_object()) {
    return Status::InvalidArgument("{}: missing object '{}'", origin, key);
  }
  return *it;
}

// The text of preset `name` of `kind`, and its path in `path`. Errors: InvalidArgument for a
// name that is not a plain file name, NotFound listing the known presets.
Result<std::string> ReadPreset(std::string_view kind, std::string_view name, std::string& path) {
  bool safe =
      !name.empty() && name.find("..") == std::string_view::npos &&
      std::all_of(name.begin(), name.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == '_';
      });
  if (!safe) return Status::InvalidArgument("bad {} preset name '{}'", kind, name);
  MMPT_ASSIGN_OR_RETURN(std::string dir, PresetDir());
  dir += "/" + std::string(kind);
  path = dir + "/" + std::string(name) + ".json";
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    std::string known;
    for (const std::string& n : ListPresets(kind)) known += (known.empty() ? "" : ", ") + n;
    return Status::NotFound("unknown {} preset '{}' (known: {}; looked in {})", kind, name,
                            known.empty() ? "none" : known, dir);
  }
  return text;
}

// A preset naming a "base" preset of its kind is that base with its own fields merged over it,
// objects field by field (JSON merge patch): a variant states only what differs.
Result<json> WithBase(json doc, std::string_view kind, std::string_view origin, int depth = 0) {
  auto base = doc.find("base");
  if (base == doc.end()) return doc;
  if (!base->is_string()) return Status::Corrupt("{}: 'base' must be a preset name", origin);
  if (depth == 8) return Status::InvalidArgument("{}: 'base' presets nest too deep", origin);
  std::string path;
  Result<std::string> text = ReadPreset(kind, base->get<std::string>(), path);
  if (!text.ok()) return text.status().WithContext(fmt::format("{}: base", origin));
  MMPT_ASSIGN_OR_RETURN(json parent, ParseJson(*text, path));
  MMPT_ASSIGN_OR_RETURN(parent, WithBase(std::move(parent), kind, path, depth + 1));
  doc.erase("base");
  parent.merge_patch(doc);
  return parent;
}

template <typename Config, typename Parse>
Result<Config> LoadPreset(std::string_view kind, std::string_view name, Parse parse) {
  std::string path;
  MMPT_ASSIGN_OR_RETURN(std::string text, ReadPreset(kind, name, path));
  MMPT_ASSIGN_OR_RETURN(Config config, parse(text, path));
  if (config.name != name) {
    return Status::InvalidArgument("{}: 'name' is '{}', expected '{}'", path, config.name, name);
  }
  return config;
}

}  // namespace

std::vector<std::string> ListPresets(std::string_view kind) {
  std::vector<std::string> names;
  auto dir = PresetDir();
  if (!dir.ok()) return names;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(*dir + "/" + std::string(kind), ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<VisionConfig> ParseVisionPreset(std::string_view text, std::string_view origin) {
  MMPT_ASSIGN_OR_RETURN(json parsed, ParseJson(text, origin));
  MMPT_ASSIGN_OR_RETURN(json doc, WithBase(std::move(parsed), "vision", origin));
  VisionConfig c;
  MMPT_RETURN_IF_ERROR(Get(doc, "name", &c.name, origin));
  MMPT_ASSIGN_OR_RETURN(json res, Section(doc, "resolution", origin));
  MMPT_ASSIGN_OR_RETURN(json enc, Section(doc, "encoder", origin));
  std::string rule;
  MMPT_RETURN_IF_ERROR(Get(res, "rule", &rule, origin));
  if (rule == "smart_resize") {
    c.rule = ResolutionRule::kSmartResize;
  } else if (rule == "fixed") {
    c.rule = ResolutionRule::kFixed;
  } else if (rule == "tiles") {
    c.rule = ResolutionRule::kTiles;
  } else {
    return Status::InvalidArgument(
        "{}: unknown resolution rule '{}' (expected smart_resize, "
        "fixed or tiles)",
        origin, rule);
  }
  MMPT_RETURN_IF_ERROR(Get(res, "patch_size", &c.patch_size, origin));
  MMPT_RETURN_IF_ERROR(Get(res, "spatial_merge", &c.spatial_merge, origin));
  MMPT_RETURN_IF_ERROR(Get(res, "temporal_patch", &c.temporal_patch, origin));
  MMPT_RETURN_IF_ERROR(Get(res, "min_pixels", &c.min_pixels, origin));
  MMPT_RETURN_IF_ERROR(Get(res, "max_pixels", &c.max_pixels, origin));
  MMPT_RETURN_IF_ERROR(Get(res, "image_size", &c.image_size, origin));
  MMPT_RETURN_IF_ERROR(Get(res, "tile_size", &c.tile_size, origin));
  MMPT_RETURN_IF_ERROR(Get(res, "min_tiles", &c.min_tiles, origin));
  MMPT_RETURN_IF_ERROR(Get(res, "max_tiles", &c.max_tiles, origin));
  MMPT_RETURN_IF_ERROR(Get(res, "thumbnail", &c.thumbnail, origin));
  MMPT_RETURN_IF_ERROR(Get(res, "tokens_per_tile", &c.tokens_per_tile, origin));
  for (auto [key, out] : {std::pair{"mean", &c.pixel_mean}, std::pair{"std", &c.pixel_std}}) {
    auto it = res.find(key);
    if (it == res.end()) continue;
    if (!it->is_array() || it->size() != 3 ||
        !std::all_of(it->begin(), it->end(), [](const json& v) { return v.is_number(); })) {
      return Status::Corrupt("{}: '{}' must be three numbers (R, G, B)", origin, key);
    }
    for (size_t i = 0; i < 3; ++i) (*out)[i] = (*it)[i].get<float>();
  }
  if (auto video = res.find("video"); video != res.end()) {  // absent: qwen-vl-utils' rule
    std::string budget;
    MMPT_RETURN_IF_ERROR(Get(*video, "budget", &budget, origin));
    if (budget == "all_frames") {
      c.video_budget = media::VideoBudget::kAllFrames;
    } else if (!budget.empty() && budget != "per_frame") {  // absent: per_frame
      return Status::InvalidArgument(
          "{}: unknown video budget '{}' (expected per_frame or all_frames)", origin, budget);
    }
    MMPT_RETURN_IF_ERROR(Get(*video, "min_pixels", &c.video_min_pixels, origin));
    MMPT_RETURN_IF_ERROR(Get(*video, "max_pixels", &c.video_max_pixels, origin));
    std::string resize;
    MMPT_RETURN_IF_ERROR(Get(*video, "resize", &resize, origin));
    std::string grid_seconds;
    MMPT_RETURN_IF_ERROR(Get(*video, "grid_seconds", &grid_seconds, origin));
    if (grid_seconds == "fps") {
      c.video_grid_seconds = media::GridSeconds::kRuleFps;
    } else if (!grid_seconds.empty() && grid_seconds != "sampled_fps") {
      return Status::InvalidArgument(
          "{}: unknown video grid_seconds '{}' (expected sampled_fps or fps)", origin,
          grid_seconds);
    }
    if (resize == "pillow") {
      c.video_resize = media::BicubicRule::kPillow;
    } else if (resize == "torchvision") {
      c.video_resize = media::BicubicRule::kTorchvision;
    } else if (!resize.empty()) {
      return Status::InvalidArgument(
          "{}: unknown video resize '{}' (expected torchvision or pillow)", origin, resize);
    }
  }
  MMPT_RETURN_IF_ERROR(Get(enc, "hidden", &c.hidden, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "layers", &c.layers, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "heads", &c.heads, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "mlp_hidden", &c.mlp_hidden, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "gated_mlp", &c.gated_mlp, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "window_size", &c.window_size, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "merger_hidden", &c.merger_hidden, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "norm", &c.norm, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "activation", &c.activation, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "norm_eps", &c.norm_eps, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "rope_theta", &c.rope_theta, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "tokens_per_second", &c.tokens_per_second, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "patch_bias", &c.patch_bias, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "position_embeddings", &c.position_embeddings, origin));
  // A list of layer indices: full_attention_layers (absent or "all": every layer) and
  // deepstack_layers (absent: none).
  auto full = enc.find("full_attention_layers");
  if (full == enc.end() || (full->is_string() && *full == "all")) {
    for (uint32_t layer = 0; layer < c.layers; ++layer) c.full_attention_layers.push_back(layer);
  } else {
    MMPT_RETURN_IF_ERROR(
        GetLayers(*full, "full_attention_layers", c.layers, &c.full_attention_layers, origin));
  }
  if (auto deepstack = enc.find("deepstack_layers"); deepstack != enc.end()) {
    MMPT_RETURN_IF_ERROR(
        GetLayers(*deepstack, "deepstack_layers", c.layers, &c.deepstack_layers, origin));
  }
  MMPT_RETURN_IF_ERROR(c.Validate().WithContext(origin));
  return c;
}

Result<LlmConfig> ParseLlmPreset(std::string_view text, std::string_view origin) {
  MMPT_ASSIGN_OR_RETURN(json doc, ParseJson(text, origin));
  LlmConfig c;
  MMPT_RETURN_IF_ERROR(Get(doc, "name", &c.name, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "hidden", &c.hidden, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "layers", &c.layers, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "heads", &c.heads, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "kv_heads", &c.kv_heads, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "head_dim", &c.head_dim, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "vocab", &c.vocab, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "ffn", &c.ffn, origin));
  if (auto moe = doc.find("moe"); moe != doc.end()) {
    if (!moe->is_object()) return Status::Corrupt("{}: 'moe' must be an object", origin);
    MMPT_RETURN_IF_ERROR(Get(*moe, "experts", &c.moe_experts, origin));
    MMPT_RETURN_IF_ERROR(Get(*moe, "active", &c.moe_active, origin));
    MMPT_RETURN_IF_ERROR(Get(*moe, "expert_ffn", &c.moe_ffn, origin));
  }
  MMPT_RETURN_IF_ERROR(c.Validate().WithContext(origin));
  return c;
}

Result<HardwareConfig> ParseHardwarePreset(std::string_view text, std::string_view origin) {
  MMPT_ASSIGN_OR_RETURN(json doc, ParseJson(text, origin));
  HardwareConfig c;
  MMPT_RETURN_IF_ERROR(Get(doc, "name", &c.name, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "bf16_flops", &c.bf16_flops, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "mfu", &c.mfu, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "vision_mfu", &c.vision_mfu, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "attention_mfu", &c.attention_mfu, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "native_encoder_factor", &c.native_encoder_factor, origin));
  MMPT_RETURN_IF_ERROR(Get(doc, "measured", &c.measured, origin));
  MMPT_RETURN_IF_ERROR(c.Validate().WithContext(origin));
  return c;
}

Result<AudioConfig> ParseAudioPreset(std::string_view text, std::string_view origin) {
  MMPT_ASSIGN_OR_RETURN(json doc, ParseJson(text, origin));
  AudioConfig c;
  MMPT_RETURN_IF_ERROR(Get(doc, "name", &c.name, origin));
  // The log-mel front end, as the model's preprocessor_config.json and processor set it.
  MMPT_ASSIGN_OR_RETURN(json features, Section(doc, "features", origin));
  MMPT_RETURN_IF_ERROR(Get(features, "sample_rate", &c.log_mel.sample_rate, origin));
  MMPT_RETURN_IF_ERROR(Get(features, "n_fft", &c.log_mel.n_fft, origin));
  MMPT_RETURN_IF_ERROR(Get(features, "hop", &c.log_mel.hop, origin));
  MMPT_RETURN_IF_ERROR(Get(features, "n_mels", &c.log_mel.n_mels, origin));
  MMPT_RETURN_IF_ERROR(Get(features, "window_seconds", &c.log_mel.chunk_seconds, origin));
  std::string padding(media::ClipPaddingName(c.log_mel.padding));
  std::string tokens(media::AudioTokenRuleName(c.log_mel.tokens));
  MMPT_RETURN_IF_ERROR(Get(features, "padding", &padding, origin));
  MMPT_RETURN_IF_ERROR(Get(features, "tokens", &tokens, origin));
  auto in_features = [&](const Status& status) {
    return status.WithContext(fmt::format("{}: features", origin));
  };
  Result<media::ClipPadding> parsed_padding = media::ParseClipPadding(padding);
  if (!parsed_padding.ok()) return in_features(parsed_padding.status());
  c.log_mel.padding = *parsed_padding;
  Result<media::AudioTokenRule> parsed_tokens = media::ParseAudioTokenRule(tokens);
  if (!parsed_tokens.ok()) return in_features(parsed_tokens.status());
  c.log_mel.tokens = *parsed_tokens;
  MMPT_ASSIGN_OR_RETURN(json enc, Section(doc, "encoder", origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "hidden", &c.hidden, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "layers", &c.layers, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "heads", &c.heads, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "mlp_hidden", &c.mlp_hidden, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "attention_window_frames", &c.attention_window_frames, origin));
  MMPT_RETURN_IF_ERROR(Get(enc, "conv_channels", &c.conv_channels, origin));
  MMPT_RETURN_IF_ERROR(c.Validate().WithContext(origin));
  return c;
}

Result<AudioConfig> LoadAudioPreset(std::string_view name) {
  return LoadPreset<AudioConfig>("audio", name, ParseAudioPreset);
}

Result<VisionConfig> LoadVisionPreset(std::string_view name) {
  return LoadPreset<VisionConfig>("vision", name, ParseVisionPreset);
}

Result<VisionConfig> VisionPresetFrom(std::string_view name_or_json) {
  if (name_or_json.starts_with('{')) {
    return ParseVisionPreset(name_or_json, "<vision preset JSON>");
  }
  return LoadVisionPreset(name_or_json);
}
Result<LlmConfig> LoadLlmPreset(std::string_view name) {
  return LoadPreset<LlmConfig>("llm", name, ParseLlmPreset);
}
Result<HardwareConfig> LoadHardwarePreset(std::string_view name) {
  return LoadPreset<HardwareConfig>("hardware", name, ParseHardwarePreset);
}

}  // namespace mmpt::cost
