#pragma once

#include <cstdint>

#include "mmpt/core/status.h"
#include "mmpt/corpora/image_encode.h"
#include "mmpt/media/image.h"

namespace mmpt::corpora {

/// Draw a `width`×`height` image of simple content chosen by `seed`: a two-colour linear
/// gradient under a few filled discs and rectangles (and, with 2 or 4 channels, a radial alpha
/// ramp). Such images compress to small files at any pixel size yet have edges and smooth
/// areas, so they exercise decoders and resamplers like photographs do.
/// `channels` is 1..4 (see Image). The same arguments give the same pixels on every machine.
/// Thread safety: pure function.
media::Image SynthesizeImage(uint32_t width, uint32_t height, uint32_t channels, uint64_t seed);

/// Draw a synthetic image (SynthesizeImage) and encode it as `options` say: the image files
/// `mmpt synth` writes. Use 4 channels for PNG/WebP with alpha, 1 for grayscale.
/// Errors: as EncodeImage. Thread safety: reentrant.
Result<std::string> SynthesizeImageFile(uint32_t width, uint32_t height, uint32_t channels,
                                        uint64_t seed, const EncodeOptions& options);

}  // namespace mmpt::corpora
