// Bindings of mmpt::cost: what an image becomes under a vision preset, and what it costs. Every
// default is a preset's: cost::Defaults names them, the preset files hold their numbers.

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bind_common.h"
#include "mmpt/core/data_dir.h"
#include "mmpt/cost/calibration.h"
#include "mmpt/cost/presets.h"
#include "mmpt/cost/vision_model.h"
#include "mmpt/media/smart_resize.h"

namespace mmpt::python {
namespace {

cost::VisionConfig VisionConfigFrom(const std::string& vision) {
  return ValueOrThrow(cost::VisionPresetFrom(vision));
}

}  // namespace

void BindCost(py::module_& m) {
  m.def(
      "smart_resize",
      [](uint32_t height, uint32_t width, const std::string& vision, std::optional<uint32_t> factor,
         std::optional<uint64_t> min_pixels, std::optional<uint64_t> max_pixels,
         std::optional<double> max_aspect_ratio) {
        media::ResizeRule rule = ValueOrThrow(cost::ResizeRuleOf(VisionConfigFrom(vision)));
        if (factor) rule.factor = *factor;
        if (min_pixels) rule.min_pixels = *min_pixels;
        if (max_pixels) rule.max_pixels = *max_pixels;
        if (max_aspect_ratio) rule.max_aspect_ratio = *max_aspect_ratio;
        media::ResizedSize size = ValueOrThrow(media::SmartResize(height, width, rule));
        return std::make_pair(size.height, size.width);
      },
      py::arg("height"), py::arg("width"), py::kw_only(),
      py::arg("vision") = std::string(cost::Defaults::kVision), py::arg("factor") = py::none(),
      py::arg("min_pixels") = py::none(), py::arg("max_pixels") = py::none(),
      py::arg("max_aspect_ratio") = py::none(),
      "(height, width) an image is resized to by the Qwen-VL rule of vision preset `vision` "
      "(default: the one `mmpt prepare` and the loader use unless told otherwise): both "
      "multiples of patch × merge, area within the preset's [min_pixels, max_pixels]. "
      "`factor`, `min_pixels`, `max_pixels` and `max_aspect_ratio` override the preset's. "
      "Raises NotFoundError (unknown preset), InvalidArgumentError for a preset with another "
      "rule, a zero side or an aspect ratio above max_aspect_ratio.");
  m.def(
      "image_cost",
      [](uint32_t height, uint32_t width, const std::string& vision,
         std::optional<uint32_t> llm_hidden) {
        if (!llm_hidden) {
          llm_hidden = ValueOrThrow(cost::LoadLlmPreset(cost::Defaults::kLlm)).hidden;
        }
        cost::ImageCost c =
            ValueOrThrow(cost::CostImage(VisionConfigFrom(vision), height, width, *llm_hidden));
        py::dict out;
        out["resized_width"] = c.resized_width;
        out["resized_height"] = c.resized_height;
        out["llm_tokens"] = c.llm_tokens;
        out["patches"] = c.patches;
        out["tiles"] = c.tiles;
        out["train_flops"] = c.train_flops;
        return out;
      },
      py::arg("height"), py::arg("width"), py::arg("vision") = std::string(cost::Defaults::kVision),
      py::arg("llm_hidden") = py::none(),
      "What a height × width image becomes (the processors' order, as smart_resize) under a vision "
      "preset (a name under presets/vision, "
      "or a preset's JSON text): resized size, LLM tokens, encoder patches, and training FLOPs "
      "of encoder + merger into an LLM of width `llm_hidden` (default: the default LLM "
      "preset's). Raises NotFoundError (unknown preset), InvalidArgumentError.");
  m.def("list_presets", &cost::ListPresets, py::arg("kind"),
        "Names of the presets of one kind: \"vision\", \"llm\" or \"hardware\".");
  m.def(
      "preset_dir", [] { return ValueOrThrow(PresetDir()); },
      "The folder the presets are read from: presets/ of mmpt's data directory ($MMPT_HOME "
      "when set). Raises NotFoundError.");
  m.def(
      "llm_preset",
      [](const std::string& name) {
        cost::LlmConfig c = ValueOrThrow(cost::LoadLlmPreset(name));
        py::dict out;
        out["name"] = c.name;
        out["hidden"] = c.hidden;
        out["layers"] = c.layers;
        out["heads"] = c.heads;
        out["kv_heads"] = c.kv_heads;
        out["head_dim"] = c.head_dim;
        out["vocab"] = c.vocab;
        out["ffn"] = c.ffn;
        out["moe_experts"] = c.moe_experts;
        out["moe_active"] = c.moe_active;
        out["moe_ffn"] = c.moe_ffn;
        out["linear_train_flops_per_token"] = c.LinearTrainFlopsPerToken();
        out["attention_train_flops_per_pair"] = c.AttentionTrainFlops(1);
        return out;
      },
      py::arg("name"),
      "An LLM preset as the cost model reads it, with its training FLOPs per token of the linear "
      "layers and per (query, key) pair of causal attention. Raises NotFoundError, CorruptError, "
      "InvalidArgumentError.");
  m.def(
      "hardware_preset",
      [](const std::string& name) {
        cost::HardwareConfig c = ValueOrThrow(cost::LoadHardwarePreset(name));
        py::dict out;
        out["name"] = c.name;
        out["bf16_flops"] = c.bf16_flops;
        out["mfu"] = c.mfu;
        out["vision_mfu"] = c.vision_mfu;
        out["attention_mfu"] = c.attention_mfu;  // 0: mfu
        out["measured"] = c.measured;
        out["native_encoder_factor"] = c.native_encoder_factor;  // 0: not measured
        return out;
      },
      py::arg("name"),
      "A hardware preset as the cost model reads it: peak FLOP/s, the utilizations that turn "
      "LLM and encoder FLOPs into seconds, and the measured native-encoder factor (0: none). "
      "Raises NotFoundError, CorruptError, InvalidArgumentError.");
  m.def(
      "calibrate",
      [](const std::vector<std::tuple<double, double, double, double, double, bool>>& batches) {
        std::vector<cost::TimedBatch> timed;
        for (const auto& [vision, llm, peak_vision, peak_linear, peak_attention, hf] : batches) {
          timed.push_back({vision, llm, peak_vision, peak_linear, peak_attention, hf});
        }
        const cost::Calibration fit = ValueOrThrow(cost::Calibrate(timed));
        py::dict out;
        out["vision"] = fit.vision;
        out["vision_hf"] = fit.vision_hf > 0 ? py::object(py::float_(fit.vision_hf)) : py::none();
        out["linear"] = fit.linear;
        out["attention"] = fit.attention;
        return out;
      },
      py::arg("batches"),
      "Fit the cost model to timed batches (cost::Calibrate): each a tuple (vision_seconds, "
      "llm_seconds, peak_vision_seconds, peak_linear_seconds, peak_attention_seconds, "
      "hf_encoder). Returns {vision, vision_hf (None when no Hugging Face encoder was timed), "
      "linear, attention}: measured over peak seconds. Raises InvalidArgumentError.");
  m.def(
      "write_hardware_preset",
      [](const std::string& presets_dir, const py::dict& fit, double peak_flops,
         const std::string& name, const std::string& comment, const std::string& measured) {
        cost::Calibration c;
        c.vision = fit["vision"].cast<double>();
        c.vision_hf = fit["vision_hf"].is_none() ? 0.0 : fit["vision_hf"].cast<double>();
        c.linear = fit["linear"].cast<double>();
        c.attention = fit["attention"].cast<double>();
        const cost::HardwareConfig config = cost::CalibratedHardware(c, peak_flops, name, measured);
        ThrowIfError(cost::WriteHardwarePreset(presets_dir, config, comment));
        return py::module_::import("json").attr("loads")(cost::HardwarePresetJson(config, comment));
      },
      py::arg("presets_dir"), py::arg("fit"), py::arg("peak_flops"), py::arg("name"),
      py::arg("comment"), py::arg("measured") = "",
      "Write the hardware preset of a device whose peak in use is `peak_flops` and whose model "
      "fits as `fit` (calibrate's; {vision: 1, vision_hf: None, linear: 1, attention: 1} for the "
      "peak itself) to `presets_dir`/hardware/<name>.json (cost::WriteHardwarePreset); returns "
      "it as written. Raises InvalidArgumentError, IOError.");
}

}  // namespace mmpt::python
