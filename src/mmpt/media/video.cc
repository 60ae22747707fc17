#include "mmpt/media/video.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <utility>

#include "mmpt/media/av_input_internal.h"
#include "mmpt/media/image_transform.h"
#include "mmpt/media/resize.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

namespace mmpt::media {
namespace {

using internal::AvErrorString;
using internal::AvInput;
using internal::FrameReader;
using internal::PacketDeleter;

// Python's round(x / f) * f, halves to even, as qwen-vl-utils' round_by_factor.
uint64_t RoundByFactor(double x, uint32_t f) {
  return static_cast<uint64_t>(std::nearbyint(x / f)) * f;
}
uint64_t CeilByFactor(double x, uint32_t f) { return static_cast<uint64_t>(std::ceil(x / f)) * f; }
uint64_t FloorByFactor(double x, uint32_t f) {
  return static_cast<uint64_t>(std::floor(x / f)) * f;
}

// round(torch.linspace(first, last, n)) as torch computes it on the CPU in float32: a step in
// float32, the first half counted up from the start and the second half down from the end,
// then rounding halves to even.
std::vector<uint64_t> LinspaceIndices(uint64_t first, uint64_t last, uint64_t n) {
  std::vector<uint64_t> indices(n);
  if (n == 1) return {first};
  const float start = static_cast<float>(first), end = static_cast<float>(last);
  const float step = (end - start) / static_cast<float>(n - 1);
  const uint64_t halfway = n / 2;
  for (uint64_t i = 0; i < n; ++i) {
    float v = i < halfway ? start + step * static_cast<float>(i)
                          : end - step * static_cast<float>(n - i - 1);
    indices[i] = static_cast<uint64_t>(std::nearbyint(v));
  }
  return indices;
}

// round(numpy.linspace(first, last, n)): float64, i · step + first, the last exactly `last`,
// then rounding halves to even (Hugging Face's Qwen3-VL video sampling).
std::vector<uint64_t> NumpyLinspaceIndices(uint64_t first, uint64_t last, uint64_t n) {
  if (n == 1) return {first};
  std::vector<uint64_t> indices(n);
  const double start = static_cast<double>(first);
  const double step = (static_cast<double>(last) - start) / static_cast<double>(n - 1);
  for (uint64_t i = 0; i + 1 < n; ++i) {
    indices[i] = static_cast<uint64_t>(std::nearbyint(static_cast<double>(i) * step + start));
  }
  indices[n - 1] = last;
  return indices;
}

struct SwsDeleter {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};

int64_t PacketTime(const AVPacket* p) { return p->pts != AV_NOPTS_VALUE ? p->pts : p->dts; }

// Every frame of the stream by timestamp, and the keyframes, from the packets alone.
struct FrameTable {
  std::vector<int64_t> pts;        // ascending: frame i is pts[i]
  std::vector<int64_t> keyframes;  // ascending
};

Result<FrameTable> ReadFrameTable(AVFormatContext* format, int stream, uint64_t max_frames) {
  std::unique_ptr<AVPacket, PacketDeleter> packet(av_packet_alloc());
  FrameTable table;
  while (true) {
    int error = av_read_frame(format, packet.get());
    if (error == AVERROR_EOF) break;
    if (error < 0) return Status::Corrupt("video: cannot read packets: {}", AvErrorString(error));
    if (packet->stream_index == stream && packet->size > 0 &&
        (packet->flags & AV_PKT_FLAG_DISCARD) == 0) {
      int64_t t = PacketTime(packet.get());
      if (t == AV_NOPTS_VALUE) {
        av_packet_unref(packet.get());
        return Status::Corrupt("video: packet {} has no timestamp", table.pts.size());
      }
      if (table.pts.size() == max_frames) {
        av_packet_unref(packet.get());
        return Status::InvalidArgument("video: more than {} frames, the limit", max_frames);
      }
      table.pts.push_back(t);
      if (packet->flags & AV_PKT_FLAG_KEY) table.keyframes.push_back(t);
    }
    av_packet_unref(packet.get());
  }
  std::sort(table.pts.begin(), table.pts.end());
  std::sort(table.keyframes.begin(), table.keyframes.end());
  return table;
}

// Convert a decoded frame to RGB at its size, as PyAV's to_ndarray(format="rgb24") does
// (libswscale, bilinear flags, the default colorspace). libswscale's vector code writes whole
// vectors past a row's last pixel, so it writes into `scratch`, rows padded to 64 bytes and a
// spare row, and the rows are copied out tight (writing into `out` directly overran its
// buffer at widths such as 350 and corrupted the heap).
Status ToRgb(const AVFrame* frame, SwsContext** sws, std::vector<uint8_t>* scratch, Image* out) {
  *sws = sws_getCachedContext(
      *sws, frame->width, frame->height, static_cast<AVPixelFormat>(frame->format), frame->width,
      frame->height, AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr);
  if (*sws == nullptr) {
    return Status::Corrupt("video: cannot convert pixel format {} to RGB", frame->format);
  }
  out->Reset(static_cast<uint32_t>(frame->width), static_cast<uint32_t>(frame->height), 3);
  const size_t row = out->row_bytes();
  const size_t stride = (row + 63) / 64 * 64;
  scratch->resize(stride * (out->height + 1));
  uint8_t* planes[4] = {scratch->data(), nullptr, nullptr, nullptr};
  int strides[4] = {static_cast<int>(stride), 0, 0, 0};
  sws_scale(*sws, frame->data, frame->linesize, 0, frame->height, planes, strides);
  for (uint32_t y = 0; y < out->height; ++y) {
    std::memcpy(out->row(y), scratch->data() + y * stride, row);
  }
  return Status::OK();
}

}  // namespace

Result<FrameRange> ClipFrames(uint64_t total_frames, double video_fps, const VideoClip& clip) {
  if (total_frames == 0 || !(video_fps > 0)) {
    return Status::InvalidArgument("video: {} frames at {} fps cannot be cut", total_frames,
                                   video_fps);
  }
  FrameRange range{0, total_frames - 1};
  if (clip.start_ms == 0 && clip.end_ms == 0) return range;
  const double length = static_cast<double>(total_frames) / video_fps;
  if (clip.start_ms != 0) {
    range.first =
        static_cast<uint64_t>(std::ceil(std::min(clip.start_ms / 1000.0, length) * video_fps));
  }
  if (clip.end_ms != 0) {
    range.last = std::min<uint64_t>(
        static_cast<uint64_t>(std::floor(std::min(clip.end_ms / 1000.0, length) * video_fps)),
        total_frames - 1);
  }
  if (range.first >= range.last) {
    return Status::InvalidArgument(
        "video: the clip {} to {} ms keeps frames {} to {} of {} at {} fps (none to sample)",
        clip.start_ms, clip.end_ms, range.first, range.last, total_frames, video_fps);
  }
  return range;
}

Result<VideoSampling> SampleVideo(uint64_t whole_video_frames, double video_fps, uint32_t height,
                                  uint32_t width, const VideoSamplingRule& rule,
                                  const VideoClip& clip) {
  const uint32_t ff = rule.frame_factor;
  if (ff == 0 || !(video_fps > 0) || !(rule.fps > 0)) {
    return Status::InvalidArgument("video: frame factor, fps and video fps must be positive");
  }
  MMPT_ASSIGN_OR_RETURN(const FrameRange range, ClipFrames(whole_video_frames, video_fps, clip));
  const uint64_t total_frames = range.count();  // what the rules count: the clip's frames
  const bool all_frames = rule.budget == VideoBudget::kAllFrames;
  const double total = static_cast<double>(total_frames);
  uint64_t n = 0;
  if (rule.nframes != 0) {
    n = all_frames ? rule.nframes : RoundByFactor(rule.nframes, ff);
  } else if (all_frames) {  // int(total / fps · fps), within [min, max] and the video
    n = static_cast<uint64_t>(total / video_fps * rule.fps);
    n = std::min<uint64_t>({std::max<uint64_t>(n, rule.min_frames), rule.max_frames, total_frames});
  } else {
    double wanted = total / video_fps * rule.fps;
    double min_frames = static_cast<double>(CeilByFactor(rule.min_frames, ff));
    double max_frames = static_cast<double>(FloorByFactor(rule.max_frames, ff));
    wanted = std::min({std::max(wanted, min_frames), max_frames, total});
    n = FloorByFactor(wanted, ff);
  }
  const uint64_t least = all_frames ? 1 : ff;
  if (n < least || n > total_frames) {
    return Status::InvalidArgument("video: {} frames sampled from {}: needs between {} and {}", n,
                                   total_frames, least, total_frames);
  }
  VideoSampling s;
  s.total_frames = total_frames;
  s.video_fps = video_fps;
  s.sample_fps = static_cast<double>(n) / std::max(total, 1e-6) * video_fps;
  s.grid_fps = rule.grid_seconds == GridSeconds::kRuleFps ? rule.fps : s.sample_fps;
  if (all_frames) {
    s.frame_indices = NumpyLinspaceIndices(range.first, range.last, n);
    while (s.frame_indices.size() % ff != 0) s.frame_indices.push_back(s.frame_indices.back());
    MMPT_ASSIGN_OR_RETURN(
        s.size,
        VideoSmartResize(n, height, width, rule.factor, ff, static_cast<double>(rule.min_pixels),
                         static_cast<double>(rule.max_pixels), rule.max_aspect_ratio));
    return s;
  }
  s.frame_indices = LinspaceIndices(range.first, range.last, n);
  double max_pixels = std::max(std::min(static_cast<double>(rule.max_pixels),
                                        rule.total_pixels / static_cast<double>(n) * ff),
                               std::floor(static_cast<double>(rule.min_pixels) * 1.05));
  // The bound is fractional when the total budget sets it, and the reference keeps the fraction.
  MMPT_ASSIGN_OR_RETURN(
      s.size, SmartResize(height, width, rule.factor, static_cast<double>(rule.min_pixels),
                          max_pixels, rule.max_aspect_ratio));
  return s;
}

std::vector<double> VideoSampling::GroupSeconds(uint32_t temporal_patch) const {
  std::vector<double> seconds;
  const size_t n = frame_indices.size();
  for (size_t i = 0; i < n && temporal_patch > 0; i += temporal_patch) {
    const uint64_t last = frame_indices[std::min(i + temporal_patch, n) - 1];
    seconds.push_back((static_cast<double>(frame_indices[i]) / video_fps +
                       static_cast<double>(last) / video_fps) /
                      2);
  }
  return seconds;
}

namespace {

// Chooses the frames to decode once the probe and the frame count are known.
using FrameChooser =
    std::function<Result<std::vector<uint64_t>>(const AvInfo& info, uint64_t total_frames)>;
// Receives the k-th chosen frame as RGB as displayed (the buffer is reused for the next frame).
using FrameSink = std::function<Status(size_t k, const Image& rgb)>;

// Probe, count frames from the packets, choose, then decode only the chosen frames, seeking to
// the last keyframe at or before a frame whenever one lies past the frame last decoded.
Status DecodeChosenFrames(std::span<const std::byte> bytes, const AvLimits& limits,
                          const FrameChooser& choose, const FrameSink& sink) {
  MMPT_ASSIGN_OR_RETURN(AvInfo info, ProbeAv(bytes, limits));
  if (!info.video) return Status::InvalidArgument("video: {} has no video stream", info.container);
  const int stream = info.video->stream_index;
  FrameTable table;
  {
    MMPT_ASSIGN_OR_RETURN(std::unique_ptr<AvInput> input, AvInput::Open(bytes));
    MMPT_ASSIGN_OR_RETURN(table, ReadFrameTable(input->format(), stream, limits.max_frames));
  }
  MMPT_ASSIGN_OR_RETURN(std::vector<uint64_t> indices, choose(info, table.pts.size()));
  if (!std::is_sorted(indices.begin(), indices.end())) {
    return Status::InvalidArgument("video: frame indices must ascend");
  }
  if (!indices.empty() && indices.back() >= table.pts.size()) {
    return Status::OutOfRange("video: frame {} of a video of {} frames", indices.back(),
                              table.pts.size());
  }
  if (indices.empty()) return Status::OK();
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<AvInput> input, AvInput::Open(bytes));
  FrameReader reader(input->format(), stream);
  MMPT_RETURN_IF_ERROR(reader.Init());
  std::unique_ptr<SwsContext, SwsDeleter> sws;
  std::vector<uint8_t> scratch;
  Image rgb;
  int64_t last_pts = std::numeric_limits<int64_t>::min();
  bool decoded_any = false;
  for (size_t k = 0; k < indices.size(); ++k) {
    if (k > 0 && indices[k] == indices[k - 1]) {
      MMPT_RETURN_IF_ERROR(sink(k, rgb));
      continue;
    }
    const int64_t target = table.pts[indices[k]];
    auto key = std::upper_bound(table.keyframes.begin(), table.keyframes.end(), target);
    int64_t keyframe = key == table.keyframes.begin() ? table.pts.front() : *std::prev(key);
    if (!decoded_any || keyframe > last_pts) MMPT_RETURN_IF_ERROR(reader.SeekTo(keyframe));
    const AVFrame* frame = nullptr;
    do {
      MMPT_ASSIGN_OR_RETURN(frame, reader.Next());
      if (frame == nullptr) {
        return Status::Corrupt("video: frame {} (pts {}) did not decode", indices[k], target);
      }
      decoded_any = true;
      last_pts = frame->best_effort_timestamp;
    } while (last_pts < target);
    if (last_pts > target) {
      return Status::Corrupt("video: frame {} (pts {}) is missing from the decoded stream",
                             indices[k], target);
    }
    if (frame->width != static_cast<int>(info.video->width) ||
        frame->height != static_cast<int>(info.video->height)) {
      return Status::Corrupt("video: frame {} is {}x{}, the stream {}x{}", indices[k], frame->width,
                             frame->height, info.video->width, info.video->height);
    }
    SwsContext* raw = sws.release();
    Status converted = ToRgb(frame, &raw, &scratch, &rgb);
    sws.reset(raw);
    MMPT_RETURN_IF_ERROR(converted);
    if (info.video->orientation != 1)
      rgb = ApplyExifOrientation(std::move(rgb), info.video->orientation);
    MMPT_RETURN_IF_ERROR(sink(k, rgb));
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<Image>> DecodeVideoFrames(std::span<const std::byte> bytes,
                                             std::span<const uint64_t> frame_indices,
                                             const AvLimits& limits, uint64_t* total_frames) {
  std::vector<Image> frames(frame_indices.size());
  MMPT_RETURN_IF_ERROR(DecodeChosenFrames(
      bytes, limits,
      [&](const AvInfo&, uint64_t count) -> Result<std::vector<uint64_t>> {
        if (total_frames != nullptr) *total_frames = count;
        return std::vector<uint64_t>(frame_indices.begin(), frame_indices.end());
      },
      [&](size_t k, const Image& rgb) {
        frames[k] = rgb;
        return Status::OK();
      }));
  return frames;
}

Result<PreprocessedVideo> PreprocessVideo(std::span<const std::byte> bytes,
                                          const VideoPreprocessConfig& config) {
  if (config.patch.temporal_patch_size != config.sampling.frame_factor) {
    return Status::InvalidArgument("video: temporal patch {} differs from the frame factor {}",
                                   config.patch.temporal_patch_size, config.sampling.frame_factor);
  }
  PreprocessedVideo out;
  std::vector<Image> resized;  // frames are resized as they decode: only these stay in memory
  MMPT_RETURN_IF_ERROR(DecodeChosenFrames(
      bytes, config.limits,
      [&](const AvInfo& info, uint64_t total_frames) -> Result<std::vector<uint64_t>> {
        MMPT_ASSIGN_OR_RETURN(
            out.sampling, SampleVideo(total_frames, info.video->fps, info.video->display_height(),
                                      info.video->display_width(), config.sampling, config.clip));
        resized.resize(out.sampling.frame_indices.size());
        return out.sampling.frame_indices;
      },
      [&](size_t k, const Image& rgb) {
        return ResizeBicubicInto(rgb, out.sampling.size.width, out.sampling.size.height,
                                 config.sampling.resize, &resized[k]);
      }));
  out.height = out.sampling.size.height;
  out.width = out.sampling.size.width;
  std::vector<const Image*> slots;
  for (const Image& frame : resized) slots.push_back(&frame);
  MMPT_ASSIGN_OR_RETURN(out.grid, PatchGrid(out.height, out.width, config.patch));
  out.grid.t = static_cast<uint32_t>(slots.size() / config.patch.temporal_patch_size);
  out.pixel_values.resize(out.grid.patches() * PatchDim(config.patch));
  MMPT_RETURN_IF_ERROR(NormalizePatchifyFrames(slots, config.patch, out.pixel_values));
  out.second_per_grid_t = out.sampling.SecondsPerGridStep(config.patch.temporal_patch_size);
  return out;
}

}  // namespace mmpt::media
