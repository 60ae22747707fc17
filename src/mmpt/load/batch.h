#pragma once

// What a rank gets for one micro-step (docs/design.md, "The batch"): the packed token arrays
// of its CP shard, the pixels of the images it encodes, and the vision-DP routing.

#include <cstdint>
#include <string>
#include <vector>

namespace mmpt::load {

/// The label of a token that has no loss.
inline constexpr int32_t kIgnoreLabel = -100;

/// A sample the loader left out of its pack because it turned out bad at load time.
struct DroppedSample {
  uint32_t source = 0;  // source id, as in the plan
  uint64_t index = 0;   // sample index within its source, as in the plan
  uint32_t pack = 0;    // pack slot within the micro-step (0 ≤ pack < mbs)
  std::string reason;   // the Status message that made it bad (names file and sample)
};

/// One vision-DP routing segment: `row_count` embedding rows of image `image` starting at row
/// `row_begin` feed local token positions [local_offset, +row_count) of CP rank `consumer`;
/// CP rank `source_rank` encodes them. (cp::RowSegment with its consumer.)
struct RouteSegment {
  int32_t consumer = 0;
  int32_t image = 0;
  int32_t row_begin = 0;
  int32_t row_count = 0;
  int32_t local_offset = 0;
  int32_t source_rank = 0;

  bool operator==(const RouteSegment&) const = default;
};

/// The training input of one (step, micro-step) for one (DP rank, CP rank). Every array is
/// contiguous and owned here; the Python module hands them out without copies.
///
/// Token arrays hold this CP rank's T tokens: the micro-step's packs (mbs of them) one after
/// the other in THD layout, each sub-sequence padded to a multiple of `pad_multiple` and, when
/// cp > 1, only chunks r and 2·CP−1−r of each (Transformer Engine's THD split).
/// Labels follow Megatron's convention: `labels[i]` is the token that follows token i in its
/// sub-sequence when that token carries loss, else kIgnoreLabel; `loss_mask[i]` is 1 exactly
/// where labels[i] ≠ kIgnoreLabel.
struct Batch {
  uint64_t step = 0;
  uint32_t micro_step = 0;
  uint32_t dp_rank = 0;
  uint32_t cp_rank = 0;
  uint32_t cp = 1;
  uint64_t plan_hash = 0;  // StepPlan::Hash() of the step, for the agreement check
  /// Samples the plan dropped from the whole step (StepPlan::dropped: over-long, or too many
  /// images), over every rank: the same in every batch of the step, so count it once per step.
  uint64_t plan_dropped = 0;

  std::vector<int32_t> tokens;        // [T]
  std::vector<int32_t> labels;        // [T]
  std::vector<float> loss_mask;       // [T], 0 or 1
  std::vector<int32_t> position_ids;  // [T], or [3, T] (t, h, w rows) with M-RoPE
  uint32_t position_rows = 1;         // 1, or 3 with M-RoPE
  /// Boundaries of the sub-sequences over the whole micro-step, unpadded and padded (global,
  /// not per CP rank, as Transformer Engine takes them): [S + 1] each.
  std::vector<int32_t> cu_seqlens;
  std::vector<int32_t> cu_seqlens_padded;
  int32_t max_seqlen = 0;  // longest padded sub-sequence
  uint32_t pad_multiple = 1;

  /// The micro-step's vision items are, pack by pack, the pack's images in token order, then
  /// its videos in token order (the plan's order, plan::PackCp::vision). Images and videos
  /// both go through the vision encoder and route alike; their pixels stay apart, as Qwen-VL
  /// takes them.
  ///
  /// The images this CP rank encodes, in the order of `pixel_values`: patches × patch_dim floats
  /// in Qwen's layout, and [images, 3] grids (t, h, w in patches).
  std::vector<float> pixel_values;
  uint32_t patch_dim = 0;
  std::vector<int32_t> image_grid_thw;
  /// Index of each encoded image among the micro-step's vision items.
  std::vector<int32_t> encoded_images;
  /// The videos this CP rank encodes, likewise: pixel_values_videos rows (frames in temporal
  /// pairs), [videos, 3] grids, Qwen2.5-VL's second_per_grid_ts, and each one's index among
  /// the micro-step's vision items.
  std::vector<float> pixel_values_videos;
  std::vector<int32_t> video_grid_thw;
  std::vector<float> second_per_grid_ts;
  std::vector<int32_t> encoded_videos;

  /// Vision DP: for every vision item of the micro-step its LLM rows, which CP rank encodes it
  /// (the first, when several do), and every rank's consumed row segments, so each rank can run
  /// the exchange; at CP 1 one rank encodes and consumes everything.
  std::vector<int32_t> image_rows;     // [vision items]
  std::vector<int32_t> image_encoder;  // [vision items]: CP rank that encodes the item
  std::vector<RouteSegment> routes;    // all ranks' consumed segments, by consumer
  /// This CP rank's side of the exchange (cp::RankExchange over the micro-step's items): rows
  /// of its local embeddings (its encoded items', ascending) to send, grouped by destination;
  /// rows sent to then received from each rank ([2, CP]); for each consumed row in local token
  /// order its row in concat(local, received), and its local token position.
  std::vector<int32_t> exchange_send_index;
  std::vector<int32_t> exchange_splits;
  std::vector<int32_t> exchange_gather_index;
  std::vector<int32_t> exchange_positions;

  /// Audio clips (Qwen2-Audio, Qwen2.5-Omni): the micro-step's clips are, pack by pack, the
  /// pack's clips in token order (plan::PackCp::audio's order). The clips this CP rank encodes,
  /// as the models' processors give them: log-mel `input_features` [clips, mel_bins,
  /// feature_frames] and `feature_attention_mask` [clips, feature_frames] (1 on the clip's own
  /// frames). feature_frames is the preset's window when its encoder runs over all of it
  /// (Whisper, Qwen2-Audio), else the longest encoded clip's frames (Qwen2.5-Omni, whose
  /// encoder takes the masked frames only, so the shorter padding gives it the same input).
  std::vector<float> input_features;
  std::vector<int32_t> feature_attention_mask;
  uint32_t mel_bins = 0;
  uint32_t feature_frames = 0;
  /// Index of each encoded clip among the micro-step's clips.
  std::vector<int32_t> encoded_audios;
  /// Audio DP, as vision DP above: per clip its LLM rows and the CP rank that encodes it, and
  /// every rank's consumed segments (RouteSegment::image is the clip).
  std::vector<int32_t> audio_rows;
  std::vector<int32_t> audio_encoder;
  std::vector<RouteSegment> audio_routes;
  std::vector<int32_t> audio_exchange_send_index;  // this rank's exchange of the clips, as above
  std::vector<int32_t> audio_exchange_splits;
  std::vector<int32_t> audio_exchange_gather_index;
  std::vector<int32_t> audio_exchange_positions;

  /// Per sub-sequence: source and sample index (what the plan placed, less what was dropped).
  std::vector<uint32_t> sample_source;
  std::vector<uint64_t> sample_index;
  std::vector<DroppedSample> dropped;

  uint64_t num_tokens() const { return tokens.size(); }
  uint64_t num_patches() const { return patch_dim == 0 ? 0 : pixel_values.size() / patch_dim; }
  uint64_t num_video_patches() const {
    return patch_dim == 0 ? 0 : pixel_values_videos.size() / patch_dim;
  }
  /// Bytes held by the arrays (what counts against the loader's memory bound).
  uint64_t size_bytes() const;
};

}  // namespace mmpt::load
