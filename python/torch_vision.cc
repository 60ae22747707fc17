// `mmpt._vision`: the native vision encoder (src/mmpt/vision) for `mmpt.torch.VisionEncoder`.
// A module of its own, built with libtorch's Python bindings, so `import mmpt` never loads torch;
// errors are raised as mmpt's exception classes (bind_core.cc owns them).
#include <torch/python.h>

#include <optional>
#include <string>

#include "mmpt/cost/presets.h"
#include "mmpt/vision/checkpoint.h"
#include "mmpt/vision/encoder_config.h"
#include "mmpt/vision/torch/encoder.h"

namespace py = pybind11;

namespace mmpt::vision {
namespace {

[[noreturn]] void Throw(const Status& status) {
  py::object cls =
      py::module_::import("mmpt._mmpt").attr("_error_class")(static_cast<int>(status.code()));
  PyErr_SetString(cls.ptr(), status.message().c_str());
  throw py::error_already_set();
}

template <typename T>
T ValueOrThrow(Result<T> result) {
  if (!result.ok()) Throw(result.status());
  return std::move(*result);
}

// The caller's overrides of a preset's encoder fields.
struct Overrides {
  std::optional<uint32_t> layers, hidden, heads, mlp_hidden, window_size, position_embeddings;
  std::optional<std::vector<uint32_t>> full_attention_layers, deepstack_layers;
};

// The preset with the caller's overrides, then the encoder it describes. A smaller `layers`
// keeps the preset's full-attention and DeepStack layers below it (a windowed preset with none
// below it, full attention at its last layer) unless `full_attention_layers` or
// `deepstack_layers` says; the merger's output is the LLM preset's
// hidden size unless `out_hidden` says.
Result<EncoderConfig> MakeConfig(const std::string& preset, std::optional<uint32_t> out_hidden,
                                 const std::string& llm, const Overrides& o) {
  MMPT_ASSIGN_OR_RETURN(cost::VisionConfig p, cost::VisionPresetFrom(preset));
  if (!out_hidden) {
    MMPT_ASSIGN_OR_RETURN(cost::LlmConfig l, cost::LoadLlmPreset(llm));
    out_hidden = l.hidden;
  }
  if (o.layers) {
    p.layers = *o.layers;
    auto above = [&](uint32_t layer) { return layer >= *o.layers; };
    std::erase_if(p.full_attention_layers, above);
    std::erase_if(p.deepstack_layers, above);
    // A windowed tower (Qwen2.5-VL) ends each group of layers with a full-attention one; cut
    // below its first, the tower keeps that role at its last layer.
    if (p.window_size > 0 && p.full_attention_layers.empty() && p.layers > 0) {
      p.full_attention_layers = {p.layers - 1};
    }
  }
  if (o.hidden) p.hidden = *o.hidden;
  if (o.heads) p.heads = *o.heads;
  if (o.mlp_hidden) p.mlp_hidden = *o.mlp_hidden;
  if (o.full_attention_layers) p.full_attention_layers = *o.full_attention_layers;
  if (o.window_size) p.window_size = *o.window_size;
  if (o.position_embeddings) p.position_embeddings = *o.position_embeddings;
  if (o.deepstack_layers) p.deepstack_layers = *o.deepstack_layers;
  return MakeEncoderConfig(p, *out_hidden);
}

at::ScalarType ParseDtype(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float16") return at::kHalf;
  if (name == "float64") return at::kDouble;
  Throw(
      Status::InvalidArgument("dtype '{}': expected float32, bfloat16, float16 or float64", name));
}

}  // namespace
}  // namespace mmpt::vision

PYBIND11_MODULE(_vision, m) {
  using namespace mmpt;
  using namespace mmpt::vision;
  m.doc() =
      "The native Qwen2-VL / Qwen2.5-VL / Qwen3-VL vision encoder (libtorch); use "
      "mmpt.torch.VisionEncoder.";
  py::class_<EncoderConfig>(m, "EncoderConfig")
      .def_readonly("preset", &EncoderConfig::preset)
      .def_readonly("hidden", &EncoderConfig::hidden)
      .def_readonly("layers", &EncoderConfig::layers)
      .def_readonly("heads", &EncoderConfig::heads)
      .def_readonly("mlp_hidden", &EncoderConfig::mlp_hidden)
      .def_readonly("out_hidden", &EncoderConfig::out_hidden)
      .def_readonly("gated_mlp", &EncoderConfig::gated_mlp)
      .def_readonly("rms_norm", &EncoderConfig::rms_norm)
      .def_readonly("spatial_merge", &EncoderConfig::spatial_merge)
      .def_readonly("window_merged", &EncoderConfig::window_merged)
      .def_readonly("patch_bias", &EncoderConfig::patch_bias)
      .def_readonly("deepstack_layers", &EncoderConfig::deepstack_layers)
      .def_property_readonly(
          "position_embeddings",
          [](const EncoderConfig& c) { return c.position_side * c.position_side; })
      .def_property_readonly("patch_values", &EncoderConfig::patch_values)
      .def_property_readonly("full_attention_layers",
                             [](const EncoderConfig& c) {
                               std::vector<uint32_t> layers;
                               for (uint32_t i = 0; i < c.layers; ++i) {
                                 if (c.full_attention[i]) layers.push_back(i);
                               }
                               return layers;
                             })
      .def("parameters", [](const EncoderConfig& c) {
        py::list specs;
        for (const ParameterSpec& s : Parameters(c)) specs.append(py::make_tuple(s.name, s.shape));
        return specs;
      });
  m.def(
      "make_config",
      [](const std::string& preset, std::optional<uint32_t> out_hidden, const std::string& llm,
         std::optional<uint32_t> layers, std::optional<uint32_t> hidden,
         std::optional<uint32_t> heads, std::optional<uint32_t> mlp_hidden,
         std::optional<std::vector<uint32_t>> full_attention_layers,
         std::optional<uint32_t> window_size, std::optional<uint32_t> position_embeddings,
         std::optional<std::vector<uint32_t>> deepstack_layers) {
        const Overrides o{layers,
                          hidden,
                          heads,
                          mlp_hidden,
                          window_size,
                          position_embeddings,
                          full_attention_layers,
                          deepstack_layers};
        return ValueOrThrow(MakeConfig(preset, out_hidden, llm, o));
      },
      py::arg("preset"), py::arg("out_hidden") = py::none(),
      py::arg("llm") = std::string(cost::Defaults::kLlm), py::arg("layers") = py::none(),
      py::arg("hidden") = py::none(), py::arg("heads") = py::none(),
      py::arg("mlp_hidden") = py::none(), py::arg("full_attention_layers") = py::none(),
      py::arg("window_size") = py::none(), py::arg("position_embeddings") = py::none(),
      py::arg("deepstack_layers") = py::none());
  m.def(
      "checkpoint_shapes",
      [](const std::string& path) {
        Checkpoint checkpoint = ValueOrThrow(Checkpoint::Open(path));
        py::dict shapes;
        for (const TensorEntry& t : checkpoint.tensors()) shapes[py::str(t.name)] = t.shape;
        return shapes;
      },
      py::arg("path"), "Every tensor's shape in a safetensors checkpoint, by its name.");
  m.def(
      "read_weights",
      [](const EncoderConfig& c, const std::string& path, const std::string& dtype) {
        const at::ScalarType type = ParseDtype(dtype);
        Checkpoint checkpoint = ValueOrThrow(Checkpoint::Open(path));
        return ValueOrThrow(ReadWeights(c, checkpoint, type));
      },
      py::arg("config"), py::arg("path"), py::arg("dtype"));
  m.def(
      "encode",
      [](const EncoderConfig& c, const std::vector<at::Tensor>& weights,
         const at::Tensor& pixel_values, const at::Tensor& grid_thw, const std::string& recompute) {
        const Recompute mode = ValueOrThrow(ParseRecompute(recompute));
        Result<Encoded> out = [&] {
          py::gil_scoped_release release;
          return Encode(c, weights, pixel_values, grid_thw, mode);
        }();
        Encoded encoded = ValueOrThrow(std::move(out));
        return py::make_tuple(encoded.embeddings, encoded.deepstack);
      },
      py::arg("config"), py::arg("weights"), py::arg("pixel_values"), py::arg("grid_thw"),
      py::arg("recompute"));
}
