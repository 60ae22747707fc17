#pragma once

// The few vision configurations prepare checks image sizes against. Image tokens are not
// stored: they derive from width, height and the manifest's vision config.

#include <cstdint>
#include <string_view>

#include "mmpt/core/status.h"
#include "mmpt/store/manifest.h"

namespace mmpt::store {

/// The vision config of a preset name: "qwen2-vl" and "qwen2.5-vl" (patch 14, 2×2 merge,
/// factor 28, 56²..28²·1280 pixels). Errors: InvalidArgument listing the names.
Result<VisionConfig> VisionPreset(std::string_view name);

/// LLM tokens of one image of `width`×`height` pixels under `vision` (the dynamic-resolution
/// rule's h̄·w̄ / factor²). Errors: InvalidArgument for a zero side or an extreme aspect ratio.
Result<uint64_t> ImageTokens(const VisionConfig& vision, uint32_t width, uint32_t height);

}  // namespace mmpt::store
