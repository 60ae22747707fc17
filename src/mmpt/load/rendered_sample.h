#pragma once

// A sample turned into the token sequence the LLM sees, before it is packed: its ids, which
// of them carry loss, and where its images', videos' and audio clips' placeholder tokens sit.

#include <cstdint>
#include <vector>

#include "mmpt/cp/vision_assign.h"
#include "mmpt/media/audio_in_video.h"

namespace mmpt::load {

/// One vision item of a rendered sample: an image, or a video (its frames in temporal pairs).
struct RenderedVisual {
  uint32_t token_start = 0;  // first placeholder token, offset within the sample
  uint32_t token_count = 0;  // placeholder tokens = grid_t·grid_h·grid_w / merge²
  uint32_t grid_t = 1;       // patch grid (image_grid_thw / video_grid_thw), in encoder patches
  uint32_t grid_h = 0;
  uint32_t grid_w = 0;
  uint32_t sample_image = 0;  // index of the item within its sample (MediaMeta order)
  bool video = false;         // its pixels go to pixel_values_videos
  /// A video's seconds per temporal grid step (second_per_grid_ts: temporal patch / sampled
  /// frames per second); 0 for an image.
  float second_per_grid_t = 0;
  uint16_t group = 0;          // a grouped video (store::MediaMeta::groups): this temporal group
  uint16_t groups = 0;         // its groups; 0: the whole video is this item
  uint32_t clip_start_ms = 0;  // a video's clip (store::MediaRef::start_ms, end_ms)
  uint32_t clip_end_ms = 0;
};

/// One audio clip of a rendered sample (Qwen2-Audio, Qwen2.5-Omni, Qwen3-Omni): its placeholder
/// tokens and its log-mel frames, as the plan's sample count gives them (cost::CostAudio).
struct RenderedAudio {
  uint32_t token_start = 0;   // first placeholder token, offset within the sample
  uint32_t token_count = 0;   // placeholder tokens of its first run (all of them for one run)
  uint32_t valid_frames = 0;  // mel frames of the clip (its feature mask's sum)
  /// The clip's decoded mono samples at the encoder's rate, as prepare recorded them
  /// (store::MediaMeta::frames): the loader refuses a clip that decodes to another length.
  uint32_t samples = 0;
  uint32_t sample_audio = 0;  // index of the item within its sample (MediaMeta order)
  /// Parts of a video's sound track (store::kMediaSoundTrack) up to part `part` of `parts`,
  /// its samples the track's from `track_offset` on (the plan's,
  /// plan::PlannedAudio::track_offset). parts 0: a clip of its own.
  uint16_t part = 0;
  uint16_t parts = 0;
  uint32_t track_offset = 0;
  /// The runs of its later parts (plan::PlannedAudio::joins_previous), offsets within the
  /// sample, as cp::CpImage::more_runs (cp::ForEachRun, cp::Rows): the encoder takes the parts
  /// as one clip.
  std::vector<cp::TokenRun> more_runs = {};
};

/// A video with its sound track (audio in video): the block from its first start marker, its
/// video's groups (RenderedVisual) and its track's parts (RenderedAudio) inside it, laid out by
/// media::AudioInVideoRuns; its positions are media::AudioInVideoPositions'.
struct RenderedSoundTrack {
  uint32_t token_start = 0;      // the video's start marker, offset within the sample
  media::AudioInVideoRule rule;  // the dataset's (cost::AudioInVideoRuleOf)
  media::AudioInVideo item;      // the merged grid, seconds per step and the track's tokens
};

/// The token sequence of one sample. Invariant: tokens.size() == has_loss.size(); visuals
/// (images and videos) and audios (by their first runs) are each in token order, inside
/// [0, tokens.size()), no two runs overlapping.
struct RenderedSample {
  uint32_t source = 0;  // as in the plan
  uint64_t index = 0;   // sample index within its source
  std::vector<int32_t> tokens;
  std::vector<uint8_t> has_loss;        // 1 where the token is a training target
  std::vector<RenderedVisual> visuals;  // images and videos, in token order
  std::vector<RenderedAudio> audios;
  std::vector<RenderedSoundTrack> sound_tracks;  // in token order
};

}  // namespace mmpt::load
