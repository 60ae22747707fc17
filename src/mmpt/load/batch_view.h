#pragma once

// A Batch's fields as one table: the field groups, the scalars, every array with its Python
// key, shape and place in a Batch and a BatchView. The wire (dist/batch_wire.h), ViewOf,
// Batch::size_bytes, the loader's memory estimate and the Python view all read it.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
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
  uint32_t cp = 1;
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
  std::span<const int32_t> exchange_send_index;
  std::span<const int32_t> exchange_splits;
  std::span<const int32_t> exchange_gather_index;
  std::span<const int32_t> exchange_positions;
  std::span<const float> input_features;
  std::span<const int32_t> feature_attention_mask;
  std::span<const int32_t> encoded_audios;
  std::span<const int32_t> audio_rows;
  std::span<const int32_t> audio_encoder;
  std::span<const RouteSegment> audio_routes;
  std::span<const int32_t> audio_exchange_send_index;
  std::span<const int32_t> audio_exchange_splits;
  std::span<const int32_t> audio_exchange_gather_index;
  std::span<const int32_t> audio_exchange_positions;
  std::span<const uint32_t> sample_source;
  std::span<const uint64_t> sample_index;
  std::vector<DroppedSample> dropped;

  bool has(uint32_t field) const { return (fields & field) == field; }
  uint64_t num_patches() const {
    return scalars.patch_dim == 0 ? 0 : pixel_values.size() / scalars.patch_dim;
  }
};

/// How an array of a Batch is shaped (T: the token count, n: the array's elements).
enum class ArrayShape : uint8_t {
  kTokens,     // [T]
  kPositions,  // [T], or [3, T] with M-RoPE (BatchScalars::position_rows)
  kFlat,       // [n]
  kPatches,    // [n / patch_dim, patch_dim]
  kGrids,      // [n / 3, 3]: (t, h, w) per vision item
  kFeatures,   // [clips, mel_bins, feature_frames]
  kFrames,     // [clips, feature_frames]
  kRoutes,     // [segments, 6]: RouteSegment's six int32
};

/// One array of a Batch: the key it has in Python, the field group it travels with, its shape,
/// and where it lives in a Batch and in a BatchView.
template <typename T>
struct BatchArray {
  using element_type = T;
  std::string_view name;
  uint32_t field;
  ArrayShape shape;
  std::vector<T> Batch::*owned;
  std::span<const T> BatchView::*viewed;
};

/// Every array of a Batch, in wire order: the one table that the wire (EncodeBatch,
/// DecodeBatch), ViewOf, Batch::size_bytes, the loader's memory estimate (BytesPerToken) and
/// the Python view read. A new array is a Batch member, a BatchView member and a row here.
inline constexpr std::tuple kBatchArrays{
    BatchArray<int32_t>{"tokens", kTokenField, ArrayShape::kTokens, &Batch::tokens,
                        &BatchView::tokens},
    BatchArray<int32_t>{"labels", kLabelField, ArrayShape::kTokens, &Batch::labels,
                        &BatchView::labels},
    BatchArray<float>{"loss_mask", kLossMaskField, ArrayShape::kTokens, &Batch::loss_mask,
                      &BatchView::loss_mask},
    BatchArray<int32_t>{"position_ids", kPositionField, ArrayShape::kPositions,
                        &Batch::position_ids, &BatchView::position_ids},
    BatchArray<int32_t>{"cu_seqlens", kShapeFields, ArrayShape::kFlat, &Batch::cu_seqlens,
                        &BatchView::cu_seqlens},
    BatchArray<int32_t>{"cu_seqlens_padded", kShapeFields, ArrayShape::kFlat,
                        &Batch::cu_seqlens_padded, &BatchView::cu_seqlens_padded},
    BatchArray<float>{"pixel_values", kPixelField, ArrayShape::kPatches, &Batch::pixel_values,
                      &BatchView::pixel_values},
    BatchArray<int32_t>{"image_grid_thw", kPixelField, ArrayShape::kGrids, &Batch::image_grid_thw,
                        &BatchView::image_grid_thw},
    BatchArray<int32_t>{"encoded_images", kPixelField, ArrayShape::kFlat, &Batch::encoded_images,
                        &BatchView::encoded_images},
    BatchArray<float>{"pixel_values_videos", kPixelField, ArrayShape::kPatches,
                      &Batch::pixel_values_videos, &BatchView::pixel_values_videos},
    BatchArray<int32_t>{"video_grid_thw", kPixelField, ArrayShape::kGrids, &Batch::video_grid_thw,
                        &BatchView::video_grid_thw},
    BatchArray<float>{"second_per_grid_ts", kPixelField, ArrayShape::kFlat,
                      &Batch::second_per_grid_ts, &BatchView::second_per_grid_ts},
    BatchArray<int32_t>{"encoded_videos", kPixelField, ArrayShape::kFlat, &Batch::encoded_videos,
                        &BatchView::encoded_videos},
    BatchArray<int32_t>{"image_rows", kRoutingField, ArrayShape::kFlat, &Batch::image_rows,
                        &BatchView::image_rows},
    BatchArray<int32_t>{"image_encoder", kRoutingField, ArrayShape::kFlat, &Batch::image_encoder,
                        &BatchView::image_encoder},
    BatchArray<RouteSegment>{"routes", kRoutingField, ArrayShape::kRoutes, &Batch::routes,
                             &BatchView::routes},
    BatchArray<int32_t>{"exchange_send_index", kRoutingField, ArrayShape::kFlat,
                        &Batch::exchange_send_index, &BatchView::exchange_send_index},
    BatchArray<int32_t>{"exchange_splits", kRoutingField, ArrayShape::kFlat,
                        &Batch::exchange_splits, &BatchView::exchange_splits},
    BatchArray<int32_t>{"exchange_gather_index", kRoutingField, ArrayShape::kFlat,
                        &Batch::exchange_gather_index, &BatchView::exchange_gather_index},
    BatchArray<int32_t>{"exchange_positions", kRoutingField, ArrayShape::kFlat,
                        &Batch::exchange_positions, &BatchView::exchange_positions},
    BatchArray<float>{"input_features", kPixelField, ArrayShape::kFeatures, &Batch::input_features,
                      &BatchView::input_features},
    BatchArray<int32_t>{"feature_attention_mask", kPixelField, ArrayShape::kFrames,
                        &Batch::feature_attention_mask, &BatchView::feature_attention_mask},
    BatchArray<int32_t>{"encoded_audios", kPixelField, ArrayShape::kFlat, &Batch::encoded_audios,
                        &BatchView::encoded_audios},
    BatchArray<int32_t>{"audio_rows", kRoutingField, ArrayShape::kFlat, &Batch::audio_rows,
                        &BatchView::audio_rows},
    BatchArray<int32_t>{"audio_encoder", kRoutingField, ArrayShape::kFlat, &Batch::audio_encoder,
                        &BatchView::audio_encoder},
    BatchArray<RouteSegment>{"audio_routes", kRoutingField, ArrayShape::kRoutes,
                             &Batch::audio_routes, &BatchView::audio_routes},
    BatchArray<int32_t>{"audio_exchange_send_index", kRoutingField, ArrayShape::kFlat,
                        &Batch::audio_exchange_send_index, &BatchView::audio_exchange_send_index},
    BatchArray<int32_t>{"audio_exchange_splits", kRoutingField, ArrayShape::kFlat,
                        &Batch::audio_exchange_splits, &BatchView::audio_exchange_splits},
    BatchArray<int32_t>{"audio_exchange_gather_index", kRoutingField, ArrayShape::kFlat,
                        &Batch::audio_exchange_gather_index,
                        &BatchView::audio_exchange_gather_index},
    BatchArray<int32_t>{"audio_exchange_positions", kRoutingField, ArrayShape::kFlat,
                        &Batch::audio_exchange_positions, &BatchView::audio_exchange_positions},
    BatchArray<uint32_t>{"sample_source", kShapeFields, ArrayShape::kFlat, &Batch::sample_source,
                         &BatchView::sample_source},
    BatchArray<uint64_t>{"sample_index", kShapeFields, ArrayShape::kFlat, &Batch::sample_index,
                         &BatchView::sample_index},
};

/// Call f(array) for every row of kBatchArrays, in wire order.
template <typename F>
constexpr void ForEachBatchArray(F&& f) {
  std::apply([&](const auto&... array) { (f(array), ...); }, kBatchArrays);
}

/// Bytes of a Batch's per-token arrays for each token, with `position_rows` rows of positions.
constexpr uint64_t BytesPerToken(uint32_t position_rows) {
  uint64_t bytes = 0;
  ForEachBatchArray([&](const auto& array) {
    using T = typename std::remove_reference_t<decltype(array)>::element_type;
    if (array.shape == ArrayShape::kTokens) bytes += sizeof(T);
    if (array.shape == ArrayShape::kPositions) bytes += sizeof(T) * position_rows;
  });
  return bytes;
}

/// Every field of `batch`, viewed (valid while `batch` lives).
BatchView ViewOf(const Batch& batch);

}  // namespace mmpt::load
