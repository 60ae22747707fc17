#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/vision/checkpoint.h"
#include "mmpt/vision/encoder_config.h"

namespace mmpt::vision {

/// What the encoder hands the LLM, rows in image order (the order of the batch's image pads).
struct Encoded {
  at::Tensor embeddings;  // the final merger's [patches / spatial_merge², out_hidden]
  /// One tensor like `embeddings` per DeepStack layer (Qwen3-VL), in the config's layer order;
  /// empty for towers without them.
  std::vector<at::Tensor> deepstack;
};

/// Encode a pack of images: `pixel_values` [patches, patch_values] as the loader produces them
/// (any floating type; converted to the weights' type), `grid_thw` [images, 3] integers. Returns
/// the merged embeddings and the DeepStack features.
///
/// `weights` are the encoder's parameters in Parameters(config) order, all of one floating type
/// and device (fp32 or bf16). Autograd runs through the call: gradients reach `pixel_values` and
/// every weight that requires them, whatever `recompute` is.
/// Errors: InvalidArgument for weights of the wrong count or shape (naming the parameter),
/// pixel rows of the wrong width, or grids that do not match the rows (naming the image).
Result<Encoded> Encode(const EncoderConfig& config, at::TensorList weights,
                       const at::Tensor& pixel_values, const at::Tensor& grid_thw,
                       Recompute recompute);

/// The tensors of `checkpoint` for `config`'s parameters, in Parameters(config) order, as
/// `dtype` (copied out of the mapping). Errors: those of Checkpoint::Match, and InvalidArgument
/// for a tensor that is not floating point.
Result<std::vector<at::Tensor>> ReadWeights(const EncoderConfig& config,
                                            const Checkpoint& checkpoint, at::ScalarType dtype);

}  // namespace mmpt::vision
