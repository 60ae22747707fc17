#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/media/av_probe.h"
#include "mmpt/media/image.h"
#include "mmpt/media/patchify.h"
#include "mmpt/media/resize.h"
#include "mmpt/media/smart_resize.h"

namespace mmpt::media {

/// How a video's frame size is bounded.
enum class VideoBudget : uint8_t {
  /// qwen-vl-utils' fetch_video: each frame within [min_pixels, max_pixels], the maximum lowered
  /// to total_pixels / frames · frame_factor; the frame count is a multiple of frame_factor.
  kPerFrame,
  /// Hugging Face's Qwen3VLVideoProcessor: the frame count is fps × length (not rounded to
  /// frame_factor: the last frame repeats to fill the last temporal patch, as its patchify does),
  /// indices by NumPy's float64 linspace, and all frames together within
  /// [min_pixels, max_pixels] (its smart_resize with num_frames; total_pixels is unused).
  kAllFrames,
};

/// Which frames of a video Qwen2-VL / Qwen2.5-VL / Qwen3-VL see and at what size: the rule of
/// qwen-vl-utils' fetch_video and smart_nframes, or Hugging Face's Qwen3-VL video processor
/// (`budget`). Defaults are qwen-vl-utils' for Qwen2.5-VL (factor 28); ForFactor gives them for
/// another patch × merge.
/// Where a video's seconds per grid step come from (VideoSamplingRule::grid_seconds).
enum class GridSeconds : uint8_t { kSampledFps, kRuleFps };

struct VideoSamplingRule {
  /// qwen-vl-utils' per-frame and total budgets, in LLM tokens of factor² pixels each
  /// (VIDEO_MIN_TOKEN_NUM, VIDEO_MAX_TOKEN_NUM, MODEL_SEQ_LEN; the total is 0.9 of it).
  static constexpr uint64_t kMinFrameTokens = 128, kMaxFrameTokens = 768, kSeqTokens = 128000;
  /// The defaults with frame sides multiples of `factor` (Qwen3-VL: 32) and every pixel
  /// budget scaled with it, as qwen-vl-utils derives them from its image factor.
  static VideoSamplingRule ForFactor(uint32_t factor) {
    VideoSamplingRule rule;
    const uint64_t area = uint64_t{factor} * factor;
    rule.factor = factor;
    rule.min_pixels = kMinFrameTokens * area;
    rule.max_pixels = kMaxFrameTokens * area;
    rule.total_pixels = static_cast<double>(kSeqTokens * area) * 0.9;  // as Python computes it
    return rule;
  }

  double fps = 2.0;           // frames sampled per second of video
  uint32_t min_frames = 4;    // rounded up to frame_factor
  uint32_t max_frames = 768;  // rounded down to frame_factor; never more than the video has
  uint32_t nframes = 0;       // when nonzero: exactly this many (rounded), ignoring fps
  uint32_t frame_factor = 2;  // the temporal patch: frame counts are multiples of it
  uint32_t factor = 28;       // patch × merge: frame sides are multiples of it
  uint64_t min_pixels = 128 * 28 * 28;           // per frame
  uint64_t max_pixels = 768 * 28 * 28;           // per frame, before the total budget lowers it
  double total_pixels = 128000 * 28 * 28 * 0.9;  // budget over all frames / frame_factor
  double max_aspect_ratio = 200.0;               // larger ratios are rejected, as smart_resize does
  VideoBudget budget = VideoBudget::kPerFrame;
  /// How each sampled frame is resized to `size`. Both references resize the uint8 frames with
  /// torchvision's F.resize(BICUBIC, antialias=True) before rescaling: qwen-vl-utils'
  /// fetch_video, and Hugging Face's video processors (BaseVideoProcessor.resize). Pillow's
  /// rule stays selectable (a vision preset's "video": {"resize": "pillow"}).
  BicubicRule resize = BicubicRule::kTorchvision;
  /// The rate a grid step's seconds (second_per_grid_ts) divide the temporal patch by: the
  /// one the frames were sampled at (qwen-vl-utils hands its per-video sample fps to
  /// Qwen2.5-VL's processor), or `fps` itself, as the Omni processors take it
  /// (temporal_patch_size / their videos_kwargs fps, 2.0 when none is given, for every video).
  GridSeconds grid_seconds = GridSeconds::kSampledFps;
};

/// The part of a video to sample: qwen-vl-utils' video_start / video_end, in milliseconds
/// (0: from the start / to the end).
struct VideoClip {
  uint32_t start_ms = 0;
  uint32_t end_ms = 0;
};

/// The frames [first, last] of a video of `total_frames` frames at `video_fps` that `clip`
/// keeps: qwen-vl-utils' calculate_video_frame_range (bounds clamped to the video's length,
/// first = ⌈start · fps⌉, last = min(⌊end · fps⌋, total − 1)). Errors: InvalidArgument when the
/// clip keeps fewer than two frames (first ≥ last) or the video has no frames or rate.
struct FrameRange {
  uint64_t first = 0, last = 0;
  uint64_t count() const { return last - first + 1; }
};
Result<FrameRange> ClipFrames(uint64_t total_frames, double video_fps, const VideoClip& clip);

/// The sampling of one video.
struct VideoSampling {
  uint64_t total_frames = 0;            // frames in the video
  double video_fps = 0;                 // its average frame rate
  std::vector<uint64_t> frame_indices;  // ascending, in presentation order, from 0
  double sample_fps = 0;                // frames sampled per second of video
  double grid_fps = 0;  // the rate SecondsPerGridStep takes (VideoSamplingRule::grid_seconds)
  ResizedSize size;     // every sampled frame is resized to this

  /// Seconds of video one grid step of `temporal_patch` sampled frames spans (Qwen2.5-VL's
  /// second_per_grid_ts): the one rule the plan, the loader and the preprocessing share.
  double SecondsPerGridStep(uint32_t temporal_patch) const { return temporal_patch / grid_fps; }
  /// The time of each temporal group of `temporal_patch` sampled frames, in seconds from the
  /// video's start: the mean of its first and last frame's index / video_fps (Qwen3-VL's
  /// _calculate_timestamps; a repeated last index counts as often as it is sampled).
  std::vector<double> GroupSeconds(uint32_t temporal_patch) const;
};

/// Sample a video of `total_frames` frames at `video_fps` whose frames are `height`×`width`.
/// kPerFrame (qwen-vl-utils): the count n from fps within [min_frames, max_frames] and the
/// video's length, a multiple of frame_factor; indices round(linspace(0, total_frames − 1, n))
/// computed as torch computes them in float32, halves to even; per-frame max pixels
/// max(min(max_pixels, total_pixels / n · frame_factor), ⌊1.05 · min_pixels⌋), then
/// SmartResize. kAllFrames (Hugging Face's Qwen3-VL processor): n = ⌊length · fps⌋ within
/// [min_frames, max_frames] and the video's length; indices by NumPy's float64 linspace,
/// rounded halves to even, the last repeated up to a multiple of frame_factor; the size by
/// VideoSmartResize over the n frames.
/// A `clip` samples its frames (ClipFrames) as the whole video: its count sets n, the indices
/// span [first, last] (linspace from first), so they and the timestamps stay the video's own.
/// Errors: InvalidArgument (fewer than frame_factor frames to sample, zero fps, a size
/// SmartResize refuses, a clip ClipFrames refuses). Thread safety: pure function.
Result<VideoSampling> SampleVideo(uint64_t total_frames, double video_fps, uint32_t height,
                                  uint32_t width, const VideoSamplingRule& rule = {},
                                  const VideoClip& clip = {});

/// Everything that turns video bytes into vision-encoder input. Defaults are Qwen2.5-VL's.
struct VideoPreprocessConfig {
  VideoSamplingRule sampling;
  VideoClip clip;     // the part of the video to sample
  PatchConfig patch;  // patch.temporal_patch_size must equal sampling.frame_factor
  AvLimits limits;
};

/// One video ready for the vision encoder.
struct PreprocessedVideo {
  GridThw grid;                    // video_grid_thw
  uint32_t height = 0, width = 0;  // resized frame size in pixels
  VideoSampling sampling;
  double second_per_grid_t = 0;  // second_per_grid_ts: temporal patch / sample fps
  std::vector<float, DefaultInitAllocator<float>> pixel_values;  // pixel_values_videos rows
};

/// Decode the frames at `frame_indices` (ascending; presentation order, from 0) of the first
/// video stream as RGB as displayed: turned and mirrored by the stream's display matrix
/// (VideoStreamInfo::orientation, as the ffmpeg CLI autorotates), so a phone's portrait video
/// comes out portrait. Only what the seeks leave is decoded: a seek to the last keyframe at or
/// before a frame whenever one lies past the frame last decoded. Frames are counted by
/// demuxing every packet of the stream first (no decoding).
/// `total_frames`, when not null, receives that count.
/// Errors: as ProbeAv; OutOfRange (an index past the last frame); Corrupt (a frame that does
/// not decode, packets without timestamps, frames changing size). Thread safety: reentrant.
Result<std::vector<Image>> DecodeVideoFrames(std::span<const std::byte> bytes,
                                             std::span<const uint64_t> frame_indices,
                                             const AvLimits& limits = {},
                                             uint64_t* total_frames = nullptr);

/// Probe (budgets checked on the header), count frames, sample (SampleVideo, on the displayed
/// size), decode only the sampled frames, convert to RGB (libswscale, as PyAV's
/// to_ndarray("rgb24") does), turn them as displayed, resize each by `sampling.resize`,
/// rescale, normalize and patchify in temporal pairs: `pixel_values_videos`, `video_grid_thw`
/// and `second_per_grid_ts` of Qwen2.5-VL.
/// Errors: as ProbeAv, SampleVideo and DecodeVideoFrames; InvalidArgument when the temporal
/// patch and the frame factor differ. Thread safety: reentrant.
Result<PreprocessedVideo> PreprocessVideo(std::span<const std::byte> bytes,
                                          const VideoPreprocessConfig& config = {});

}  // namespace mmpt::media
