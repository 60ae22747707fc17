#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "mmpt/balance/balancer.h"
#include "mmpt/core/status.h"
#include "mmpt/cp/thd_split.h"
#include "mmpt/cp/vision_assign.h"

namespace mmpt::plan {

using balance::ParseSyncModel;
using balance::SyncModel;
using balance::SyncModelName;

/// The parallel layout a plan is made for. Only DP ranks get different data: the TP, PP and CP
/// ranks of one DP replica share its packs (CP splits each pack later, in the cp stage).
struct Layout {
  uint32_t dp = 1;          // data-parallel ranks (= pack owners)
  uint32_t tp = 1;          // tensor-parallel size (shares data)
  uint32_t pp = 1;          // pipeline-parallel stages (share data)
  uint32_t cp = 1;          // context-parallel size (splits each pack, see the cp stage)
  uint32_t ep = 1;          // expert-parallel size: DP ranks r with equal r / ep form a sync group
  uint32_t ga = 1;          // gradient-accumulation micro-steps per step
  uint32_t mbs = 1;         // packs per rank per micro-step
  uint32_t seq_len = 8192;  // tokens per pack (the packing capacity)
  SyncModel sync = SyncModel::kMicrostep;

  /// Packs in one global batch: dp × ga × mbs.
  uint64_t packs_per_step() const { return uint64_t{dp} * ga * mbs; }
  /// How each pack is split over its CP group (Transformer Engine's THD split): CP size, and
  /// Megatron's sequence parallelism (2·TP·CP padding) whenever TP > 1. Token indices are left
  /// to the rank that needs them.
  cp::ThdSplitOptions SplitOptions() const;
  /// The grid its packs are balanced on: DP ranks × GA micro-steps × MBS packs, sync groups of
  /// EP ranks, its sync model. The one rule for the planners, the estimates and the simulator.
  balance::Grid BalanceGrid() const {
    return balance::Grid{.dp = dp, .ga = ga, .mbs = mbs, .group = ep, .pp = pp, .sync = sync};
  }
  /// The multiple every packed sub-sequence is padded to: cp::PadMultiple(SplitOptions()), i.e.
  /// 2·CP, or 2·TP·CP when TP > 1. The one rule for every reader of a layout; Validate() first.
  uint32_t PadMultiple() const;
  /// Check the layout is possible. Errors: InvalidArgument, e.g. "dp 6 is not divisible by
  /// ep 4", a zero size, or (under CP or TP) seq_len not divisible by PadMultiple().
  Status Validate() const;
};

/// One image as the plan sees it: where it comes from, what the vision rule makes of it, and
/// what it costs to encode.
struct PlannedImage {
  uint32_t sample_image = 0;    // index of the image within its sample (0-based)
  uint32_t width = 0;           // original width in pixels
  uint32_t height = 0;          // original height in pixels
  uint32_t resized_width = 0;   // width the encoder sees (smart_resize, fixed size, or tile grid)
  uint32_t resized_height = 0;  // height the encoder sees
  uint32_t llm_tokens = 0;      // placeholder tokens this image takes in the LLM sequence
  /// First placeholder token of the image, as an offset in its sample's token sequence: the
  /// text tokens before it (cut at the sample's kept text when truncated) plus the placeholders
  /// of the images before it. The loader renders the sample with the image exactly here.
  uint32_t token_start = 0;
  uint32_t patches = 0;     // encoder sequence length (all tiles together)
  double vision_flops = 0;  // training FLOPs (forward + backward) to encode it
};

/// One video as the plan sees it. Its tokens are placed like an image's (token_start counts
/// every media item before it in its sample), so a video may straddle CP ranks, and the cp
/// stage assigns it to an encoding rank among the pack's vision items.
struct PlannedVideo {
  uint32_t sample_video = 0;  // index of the video item within its sample (0-based; each
                              // group of a grouped video is an item: store::MediaMeta::groups)
  uint32_t width = 0;         // original frame size in pixels
  uint32_t height = 0;
  uint32_t resized_width = 0;  // frame size the encoder sees (media::SampleVideo)
  uint32_t resized_height = 0;
  uint32_t frames = 0;          // frames sampled (a multiple of the temporal patch)
  uint32_t llm_tokens = 0;      // placeholder tokens in the LLM sequence
  uint32_t token_start = 0;     // as PlannedImage::token_start
  uint32_t patches = 0;         // encoder sequence length over all grid steps
  double vision_flops = 0;      // training FLOPs (forward + backward) to encode it
  float second_per_grid_t = 0;  // seconds one grid step spans (cost::VideoCost's)
};

/// One audio clip as the plan sees it: placed like an image, encoded by the audio encoder.
struct PlannedAudio {
  uint32_t sample_audio = 0;  // index of the clip within its sample (0-based)
  uint32_t llm_tokens = 0;    // placeholder tokens in the LLM sequence
  uint32_t token_start = 0;   // as PlannedImage::token_start
  double audio_flops = 0;     // training FLOPs (forward + backward) to encode it
  uint32_t samples = 0;  // its decoded length (cost::AudioItem::samples), which the loader checks
  uint32_t valid_frames = 0;  // mel frames holding audio (the feature mask's ones)
  /// A sound track's part that the audio encoder takes with the clip before it (the part
  /// before it in its attention window, cost::AudioItem::joins_previous): together they are
  /// one clip of the encoder, placed in several runs (plan::AudioClips).
  bool joins_previous = false;
  /// A sound track's part: the track's samples before it (cost::AudioItem::track_offset), where
  /// the loader cuts its frames from the whole track's features.
  uint32_t track_offset = 0;
};

/// One sample placed in a pack: one sub-sequence of the packed sequence (its own attention
/// block, its own entry in cu_seqlens).
struct PlannedSequence {
  uint64_t index = 0;        // sample index within its source
  uint32_t source = 0;       // source id (index into the corpus's source list)
  uint32_t tokens = 0;       // LLM tokens of this sub-sequence: text + image placeholders
  uint32_t text_tokens = 0;  // text tokens alone (after truncation)
  uint32_t image_begin = 0;  // images of this sample: StepPlan::images[image_begin, image_end)
  uint32_t image_end = 0;
  bool truncated = false;    // true when the sample was cut to fit the sequence length
  uint32_t video_begin = 0;  // videos: StepPlan::videos[video_begin, video_end)
  uint32_t video_end = 0;
  uint32_t audio_begin = 0;  // audio clips: StepPlan::audios[audio_begin, audio_end)
  uint32_t audio_end = 0;
  /// Padding after it beyond the layout's pad multiple, a multiple of it: where its CP chunk
  /// boundaries fall (plan::SamplePadding; under naive CP only). Takes pack room as tokens do.
  uint32_t cp_padding = 0;
};

/// A sample by its source and its index within the source, as a PlannedSequence names it.
struct SampleId {
  uint32_t source = 0;
  uint64_t index = 0;

  bool operator==(const SampleId&) const = default;
};

/// One pack: a packed sequence of at most Layout::seq_len tokens, and its cost.
struct PlannedPack {
  uint32_t sequence_begin = 0;  // sub-sequences: StepPlan::sequences[sequence_begin, sequence_end)
  uint32_t sequence_end = 0;
  uint32_t tokens = 0;        // Σ tokens of its sub-sequences (≤ seq_len; the rest is padding)
  uint32_t images = 0;        // number of images
  double vision_seconds = 0;  // estimated vision encoder time (forward + backward) on one rank
  double llm_seconds = 0;     // estimated LLM time (forward + backward) on one rank
  double audio_seconds = 0;   // estimated audio encoder time (forward + backward) on one rank
};

/// Estimated times of one step (seconds) under the layout's sync model (balance::Evaluate).
using StepEstimate = balance::Estimate;

/// The cp stage's result for one pack: how Transformer Engine's THD split cuts it over the CP
/// group (padding for sequence parallelism included), which CP rank encodes each of its images,
/// and where each image's embedding rows go (plan/cp_stage.h fills it; the loader executes it
/// and the simulator evaluates it). Images are indexed in pack order. The split carries no
/// token indices: a rank derives its own with cp::PartitionedIndices.
///
/// `vision` assigns the pack's vision items: its images in pack order, then its videos in pack
/// order (item i ≥ the pack's image count is video i − images). `audio` assigns its audio
/// clips, in pack order, among the same CP ranks by audio encoder cost; it stays empty (no
/// ranks) for a pack of a plan without audio.
struct PackCp {
  cp::ThdSplit split;
  cp::EncoderAssignment vision;
  cp::EncoderAssignment audio;
};

/// The plan of one global step for every DP rank: which samples form which pack, and each
/// pack's sub-sequences and images. Every rank computes the same StepPlan from the same
/// (metadata, config, seed, planner state); Hash() lets ranks check they agree.
///
/// Arrays are flat (struct of arrays, CSR): pack p = packs[p], with
/// p = (rank × ga + micro_step) × mbs + slot; its sequences and their images are index ranges.
///
/// Stages: pack ▸ balance fill `packs`, `sequences`, `images`, `videos`, `audios`; the cp stage
/// (plan ▸ cp) runs after balance for every layout and adds each pack's split and vision assignment
/// beside these arrays, indexed by pack (an empty pack slot keeps an empty entry).
struct StepPlan {
  uint64_t step = 0;
  Layout layout;
  std::vector<PlannedPack> packs;          // dp × ga × mbs entries, in (rank, micro, slot) order
  std::vector<PlannedSequence> sequences;  // every placed sample once
  std::vector<PlannedImage> images;        // every image of every placed sample
  std::vector<PlannedVideo> videos;        // every video of every placed sample
  std::vector<PlannedAudio> audios;        // every audio clip of every placed sample
  std::vector<PackCp> cp;                  // per pack (the cp stage); empty before it runs
  /// Samples drawn for this step and left out of every pack, in draw order: over-long under
  /// the over-long policy, or holding more images than a pack may (StepStats::dropped). A
  /// sample drawn twice and dropped twice is listed twice.
  std::vector<SampleId> dropped;
  StepEstimate estimate;

  /// Index of pack (rank, micro_step, slot) in `packs`.
  size_t PackIndex(uint32_t rank, uint32_t micro_step, uint32_t slot) const {
    return (size_t{rank} * layout.ga + micro_step) * layout.mbs + slot;
  }
  const PlannedPack& Pack(uint32_t rank, uint32_t micro_step, uint32_t slot = 0) const {
    return packs[PackIndex(rank, micro_step, slot)];
  }
  /// The packs of one DP rank, in micro-step order (ga × mbs entries).
  std::span<const PlannedPack> RankPacks(uint32_t rank) const {
    return std::span<const PlannedPack>(packs).subspan(PackIndex(rank, 0, 0),
                                                       size_t{layout.ga} * layout.mbs);
  }
  std::span<const PlannedSequence> Sequences(const PlannedPack& pack) const {
    return std::span<const PlannedSequence>(sequences).subspan(
        pack.sequence_begin, pack.sequence_end - pack.sequence_begin);
  }
  std::span<const PlannedImage> Images(const PlannedSequence& sequence) const {
    return std::span<const PlannedImage>(images).subspan(sequence.image_begin,
                                                         sequence.image_end - sequence.image_begin);
  }
  std::span<const PlannedVideo> Videos(const PlannedSequence& sequence) const {
    return std::span<const PlannedVideo>(videos).subspan(sequence.video_begin,
                                                         sequence.video_end - sequence.video_begin);
  }
  std::span<const PlannedAudio> Audios(const PlannedSequence& sequence) const {
    return std::span<const PlannedAudio>(audios).subspan(sequence.audio_begin,
                                                         sequence.audio_end - sequence.audio_begin);
  }

  /// Hash every field that defines the plan (XXH3 over a fixed little-endian field order, not
  /// over struct padding), so equal plans hash equal on every machine.
  uint64_t Hash() const;
  /// Check internal consistency: pack count, ranges in bounds and contiguous, no pack over
  /// seq_len, token sums match. Errors: Internal naming the pack at fault.
  Status Validate() const;
};

/// The clips the audio encoder takes of `audios` (a sequence's, in token order): runs of
/// consecutive items, each from one that does not join the one before it
/// (PlannedAudio::joins_previous) to the last that joins it.
std::vector<std::span<const PlannedAudio>> AudioClips(std::span<const PlannedAudio> audios);

/// Return `plan` with its packs dealt as a global packer without reordering would deal them (the
/// ablation's "+ global packing" stage, which a loader can execute too): in the packer's output
/// order (best-fit decreasing opens packs largest sample first, so
/// packs sorted by their largest sample, stable), consecutive packs filling micro-step 0 of
/// every DP rank, then micro-step 1, and so on.
StepPlan DealInPackingOrder(const StepPlan& plan);

}  // namespace mmpt::plan
