// Bindings of mmpt::cost: what an image becomes under a vision preset, and what it costs.

#include <pybind11/stl.h>

#include <string>

#include "bind_common.h"
#include "mmpt/cost/presets.h"
#include "mmpt/cost/vision_model.h"

namespace mmpt::python {
namespace {

// A preset name, or a preset's JSON text (starts with '{') for an encoder with no preset file.
cost::VisionConfig VisionConfigFrom(const std::string& vision) {
  if (!vision.empty() && vision.front() == '{') {
    return ValueOrThrow(cost::ParseVisionPreset(vision, "<vision preset from Python>"));
  }
  return ValueOrThrow(cost::LoadVisionPreset(vision));
}

}  // namespace

void BindCost(py::module_& m) {
  m.def(
      "image_cost",
      [](uint32_t width, uint32_t height, const std::string& vision, uint32_t llm_hidden) {
        cost::ImageCost c =
            ValueOrThrow(cost::CostImage(VisionConfigFrom(vision), width, height, llm_hidden));
        py::dict out;
        out["resized_width"] = c.resized_width;
        out["resized_height"] = c.resized_height;
        out["llm_tokens"] = c.llm_tokens;
        out["patches"] = c.patches;
        out["tiles"] = c.tiles;
        out["train_flops"] = c.train_flops;
        return out;
      },
      py::arg("width"), py::arg("height"), py::arg("vision") = std::string(cost::Defaults::kVision),
      py::arg("llm_hidden") = 3584,
      "What a width×height image becomes under a vision preset (a name under presets/vision, "
      "or a preset's JSON text): resized size, LLM tokens, encoder patches, and training FLOPs "
      "of encoder + merger. Raises NotFoundError (unknown preset), InvalidArgumentError.");
  m.def("list_presets", &cost::ListPresets, py::arg("kind"),
        "Names of the presets of one kind: \"vision\", \"llm\" or \"hardware\".");
}

}  // namespace mmpt::python
