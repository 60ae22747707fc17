#include "mmpt/store/vision_preset.h"

#include "mmpt/media/smart_resize.h"

namespace mmpt::store {

Result<VisionConfig> VisionPreset(std::string_view name) {
  if (name == "qwen2-vl" || name == "qwen2.5-vl") {
    return VisionConfig{std::string(name), 28, 56 * 56, 28 * 28 * 1280};
  }
  return Status::InvalidArgument("unknown vision preset '{}' (expected qwen2-vl or qwen2.5-vl)",
                                 name);
}

Result<uint64_t> ImageTokens(const VisionConfig& vision, uint32_t width, uint32_t height) {
  media::ResizeRule rule;
  rule.factor = vision.factor;
  rule.min_pixels = vision.min_pixels;
  rule.max_pixels = vision.max_pixels;
  MMPT_ASSIGN_OR_RETURN(media::ResizedSize size, media::SmartResize(height, width, rule));
  return uint64_t{size.height} * size.width / (uint64_t{vision.factor} * vision.factor);
}

}  // namespace mmpt::store
