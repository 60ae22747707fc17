#pragma once

// prepare's side of audio in video (PrepareOptions::audio_in_video): a video's sound track
// decoded, and the video's records and the track's parts laid out in token order
// (media::AudioInVideoRuns), as store::ShardWriter writes them.

#include <string_view>

#include "mmpt/core/status.h"
#include "mmpt/cost/audio_model.h"
#include "mmpt/cost/vision_model.h"
#include "mmpt/media/audio_in_video.h"
#include "mmpt/store/sample.h"
#include "mmpt/store/shard_writer.h"

namespace mmpt::ingest {

/// What a video with its sound track is laid out by: the vision preset's sampling and grid,
/// the audio preset's token rule, and the model's order (cost::AudioInVideoRuleOf).
struct SoundTrackRules {
  const cost::VisionConfig& vision;
  const cost::AudioConfig& audio;
  media::AudioInVideoRule rule;
};

/// The records of `video` (probed, its bytes `bytes`) with its sound track: its temporal
/// groups (one per grid step of its sampled frames) and the track's parts, one per run of its
/// audio tokens cut at the encoder's attention windows, in token order. A part is the track's
/// decoded samples from its first token's frames (media::FramesOfTokens) to the next part's;
/// a part inside the window of the part before it joins that part
/// (SoundTrackLayout::joins_previous: the encoder takes a window as one clip).
/// Errors: InvalidArgument naming the reason: a metadata-only or clipped video (its track would
/// need cutting), no audio stream (the Omni processors take one per video), a track longer
/// than the audio window, a grid step that spans two chunks (Qwen2.5-Omni, a video sampled at
/// under one frame a second: the reference splits the step's tokens); those of
/// media::DecodeAudio (Corrupt for a track that does not decode) and media::SampleVideo.
Result<store::SoundTrackLayout> LayOutSoundTrack(const SoundTrackRules& rules,
                                                 const store::MediaRef& video,
                                                 std::string_view bytes);

}  // namespace mmpt::ingest
