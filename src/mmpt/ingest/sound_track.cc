#include "mmpt/ingest/sound_track.h"

#include <algorithm>

#include "mmpt/media/audio.h"
#include "mmpt/media/video.h"

namespace mmpt::ingest {

namespace {

// The video's merged grid and seconds per grid step, as the plan samples it (cost::CostVideo's
// media::SampleVideo), with no audio yet.
Result<media::AudioInVideo> VideoGrid(const cost::VisionConfig& vision,
                                      const store::MediaRef& video) {
  MMPT_ASSIGN_OR_RETURN(media::VideoSamplingRule rule, cost::VideoRuleOf(vision));
  MMPT_ASSIGN_OR_RETURN(
      media::VideoSampling sampling,
      media::SampleVideo(video.frames, video.fps_milli / 1000.0, video.height, video.width, rule));
  const uint32_t factor = vision.patch_size * vision.spatial_merge;
  media::AudioInVideo item;
  item.grid_t = static_cast<uint32_t>(sampling.frame_indices.size()) / vision.temporal_patch;
  item.grid_h = sampling.size.height / factor;
  item.grid_w = sampling.size.width / factor;
  item.second_per_grid_t = static_cast<float>(sampling.SecondsPerGridStep(vision.temporal_patch));
  return item;
}

}  // namespace

Result<store::SoundTrackLayout> LayOutSoundTrack(const SoundTrackRules& rules,
                                                 const store::MediaRef& video,
                                                 std::string_view bytes) {
  if (bytes.empty()) {
    return Status::InvalidArgument("a metadata-only video has no sound track to write with it");
  }
  if (video.start_ms != 0 || video.end_ms != 0) {
    return Status::InvalidArgument(
        "a clipped video (video_start, video_end) cannot be written with its sound track");
  }
  Result<media::DecodedAudio> track =
      media::DecodeAudio({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
  if (!track.ok()) {
    return track.status().WithContext(
        "its sound track (audio in video takes each video's, as Qwen2.5-Omni's processor does)");
  }
  const media::LogMelConfig& mel = rules.audio.log_mel;
  const uint64_t samples = track->samples.size();
  if (samples > mel.WindowSamples()) {
    return Status::InvalidArgument("its sound track is {:.1f} s, longer than the {} s audio window",
                                   static_cast<double>(samples) / mel.sample_rate,
                                   mel.chunk_seconds);
  }
  MMPT_ASSIGN_OR_RETURN(media::AudioInVideo item, VideoGrid(rules.vision, video));
  item.audio_tokens = media::AudioTokens(mel.tokens, media::ValidFrames(mel, samples));

  store::SoundTrackLayout layout;
  layout.sample_rate_hz = track->source.sample_rate;
  layout.duration_ms =
      static_cast<uint32_t>((samples * 1000 + mel.sample_rate - 1) / mel.sample_rate);
  // A part is a run of the track's tokens inside one of the encoder's attention windows, its
  // samples from its first token's frames to the next part's (the last to the track's end).
  const uint32_t window_tokens =
      media::AudioTokens(mel.tokens, rules.audio.attention_window_frames);
  auto sample_of = [&](uint32_t token) -> uint64_t {
    return token == item.audio_tokens
               ? samples
               : uint64_t{media::FramesOfTokens(mel.tokens, token)} * mel.hop;
  };
  const uint32_t per_step = item.grid_h * item.grid_w;
  for (const media::AudioInVideoRun& run : media::AudioInVideoRuns(rules.rule, item)) {
    if (run.video) {
      if (run.first % per_step != 0 || run.count % per_step != 0) {
        return Status::InvalidArgument(
            "a grid step of {:.2f} s spans two {} s chunks (sampled at under a frame a second): "
            "the reference splits its tokens between them",
            item.second_per_grid_t, rules.rule.seconds_per_chunk);
      }
      layout.part_samples.insert(layout.part_samples.end(), run.count / per_step, 0);
      layout.joins_previous.insert(layout.joins_previous.end(), run.count / per_step, 0);
      continue;
    }
    for (uint32_t first = run.first, end = 0; first < run.first + run.count; first = end) {
      end = std::min(run.first + run.count, (first / window_tokens + 1) * window_tokens);
      const uint64_t begin_sample = sample_of(first), end_sample = sample_of(end);
      if (end_sample <= begin_sample ||
          media::AudioTokens(mel.tokens, media::ValidFrames(mel, end_sample)) != end) {
        return Status::Internal("sound track part at sample {} does not end at token {}",
                                begin_sample, end);
      }
      layout.part_samples.push_back(static_cast<uint32_t>(end_sample - begin_sample));
      layout.joins_previous.push_back(first % window_tokens != 0);
    }
  }
  return layout;
}

}  // namespace mmpt::ingest
