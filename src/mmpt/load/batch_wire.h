#pragma once

// A Batch as bytes, for handing it to ranks that did not load it (load/replica.h): a field
// mask, the scalars, and each array 64-byte aligned, so a reader views the arrays in place
// (a shared-memory slot, a received buffer) with no copy. A sender chooses the fields, so a
// pipeline stage receives only what it consumes.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/load/batch.h"

namespace mmpt::load {

/// Groups of Batch fields (bit masks). kShapeFields are always present: the position and
/// identity scalars, the token count, cu_seqlens (both), max_seqlen, pad_multiple, the
/// sample ids and the dropped samples.
enum BatchField : uint32_t {
  kShapeFields = 1u << 0,
  kTokenField = 1u << 1,     // tokens
  kPositionField = 1u << 2,  // position_ids
  kPixelField = 1u << 3,     // pixel_values, image_grid_thw, encoded_images, and the videos'
                             // pixel_values_videos, video_grid_thw, second_per_grid_ts,
                             // encoded_videos; the audio's input_features,
                             // feature_attention_mask, encoded_audios
  kRoutingField = 1u << 4,   // image_rows, image_encoder, routes; audio_rows, audio_encoder,
                             // audio_routes
  kLabelField = 1u << 5,     // labels
  kLossMaskField = 1u << 6,  // loss_mask
};
/// What the model's first layers consume: tokens, positions, pixels, audio features and their
/// routing.
inline constexpr uint32_t kInputFields =
    kShapeFields | kTokenField | kPositionField | kPixelField | kRoutingField;
/// What the loss consumes.
inline constexpr uint32_t kTargetFields = kShapeFields | kLabelField | kLossMaskField;
inline constexpr uint32_t kAllFields = kInputFields | kTargetFields;

/// A Batch's scalars (Batch's fields of the same names), as they travel: fixed width, no
/// padding.
struct BatchScalars {
  uint64_t step = 0;
  uint32_t micro_step = 0;
  uint32_t dp_rank = 0;
  uint32_t cp_rank = 0;
  uint32_t cp_size = 1;
  uint64_t plan_hash = 0;
  uint64_t plan_dropped = 0;
  uint64_t num_tokens = 0;  // T, also when the token arrays are left out
  uint32_t position_rows = 1;
  int32_t max_seqlen = 0;
  uint32_t pad_multiple = 1;
  uint32_t patch_dim = 0;
  uint32_t mel_bins = 0;
  uint32_t feature_frames = 0;
};

/// A Batch's fields as views: of a Batch (ViewOf) or of encoded bytes (DecodeBatch). Arrays
/// outside `fields` are empty.
struct BatchView {
  uint32_t fields = kAllFields;
  BatchScalars scalars;

  std::span<const int32_t> tokens;
  std::span<const int32_t> labels;
  std::span<const float> loss_mask;
  std::span<const int32_t> position_ids;
  std::span<const int32_t> cu_seqlens;
  std::span<const int32_t> cu_seqlens_padded;
  std::span<const float> pixel_values;
  std::span<const int32_t> image_grid_thw;
  std::span<const int32_t> encoded_images;
  std::span<const float> pixel_values_videos;
  std::span<const int32_t> video_grid_thw;
  std::span<const float> second_per_grid_ts;
  std::span<const int32_t> encoded_videos;
  std::span<const int32_t> image_rows;
  std::span<const int32_t> image_encoder;
  std::span<const RouteSegment> routes;
  std::span<const float> input_features;
  std::span<const int32_t> feature_attention_mask;
  std::span<const int32_t> encoded_audios;
  std::span<const int32_t> audio_rows;
  std::span<const int32_t> audio_encoder;
  std::span<const RouteSegment> audio_routes;
  std::span<const uint32_t> sample_source;
  std::span<const uint64_t> sample_index;
  std::vector<DroppedSample> dropped;

  bool has(uint32_t field) const { return (fields & field) == field; }
  uint64_t num_patches() const {
    return scalars.patch_dim == 0 ? 0 : pixel_values.size() / scalars.patch_dim;
  }
};

/// Every field of `batch`, viewed (valid while `batch` lives).
BatchView ViewOf(const Batch& batch);

/// Bytes EncodeBatch writes for `fields` of `view` (kShapeFields is always added).
uint64_t EncodedSize(const BatchView& view, uint32_t fields);
/// Write `fields` of `view` into `out` (exactly EncodedSize bytes, 64-byte aligned for the
/// readers to view it in place).
void EncodeBatch(const BatchView& view, uint32_t fields, std::span<std::byte> out);
/// View encoded bytes (8-byte aligned at least; the arrays point into `bytes`). Errors:
/// Corrupt naming what is wrong (magic, version, an array out of bounds or of a size that
/// disagrees with the token count), for any input bytes.
Result<BatchView> DecodeBatch(std::span<const std::byte> bytes);

}  // namespace mmpt::load
