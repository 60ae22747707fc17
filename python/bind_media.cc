// Bindings of mmpt::media: the dynamic-resolution rule.

#include <pybind11/stl.h>

#include <utility>

#include "bind_common.h"
#include "mmpt/media/smart_resize.h"

namespace mmpt::python {

void BindMedia(py::module_& m) {
  const media::ResizeRule defaults;
  m.def(
      "smart_resize",
      [](uint32_t height, uint32_t width, uint32_t factor, uint64_t min_pixels,
         uint64_t max_pixels, double max_aspect_ratio) {
        media::ResizeRule rule{factor, min_pixels, max_pixels, max_aspect_ratio};
        media::ResizedSize size = ValueOrThrow(media::SmartResize(height, width, rule));
        return std::make_pair(size.height, size.width);
      },
      py::arg("height"), py::arg("width"), py::kw_only(), py::arg("factor") = defaults.factor,
      py::arg("min_pixels") = defaults.min_pixels, py::arg("max_pixels") = defaults.max_pixels,
      py::arg("max_aspect_ratio") = defaults.max_aspect_ratio,
      "(height, width) an image is resized to by the Qwen-VL rule: both multiples of `factor`, "
      "area within [min_pixels, max_pixels]. Raises InvalidArgumentError for a zero side or an "
      "aspect ratio above max_aspect_ratio.");
}

}  // namespace mmpt::python
