#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "mmpt/core/status.h"

namespace mmpt::media {

/// What a video or audio file may declare before it is refused, unread. Defaults admit
/// anything a pretraining corpus plausibly holds (8K frames, three hours) and refuse what
/// only a broken or hostile header declares (a 10-hour video, a 100k×100k frame).
struct AvLimits {
  double max_duration_seconds = 3 * 3600.0;
  uint64_t max_frame_pixels = uint64_t{8192} * 8192;  // width × height of one frame
  uint64_t max_frames = uint64_t{1} << 20;            // ~2.4 hours at 120 fps
  uint32_t max_audio_channels = 64;
  uint32_t max_sample_rate = 768000;  // Hz
};

/// The video stream a probe reads from the container header (the first stream that is not an
/// attached picture such as an MP3's cover).
struct VideoStreamInfo {
  int stream_index = -1;
  std::string codec;          // FFmpeg's decoder name: "h264", "vp9", "mjpeg", ...
  uint32_t width = 0;         // pixels, as coded (before `orientation`)
  uint32_t height = 0;        // pixels, as coded (before `orientation`)
  double fps = 0;             // average frame rate, frames per second
  uint64_t frames = 0;        // frame count: from the header when it states one, else estimated
  bool frames_exact = false;  // true when `frames` is the header's count, not duration × fps
  double duration_seconds = 0;
  /// How a coded frame turns into the displayed one, as an EXIF orientation code (1 as coded,
  /// 2 mirror, 3 rotate 180°, 4 flip, 5 transpose, 6 rotate 90° clockwise, 7 transverse,
  /// 8 rotate 90° counter-clockwise; ApplyExifOrientation applies it): the stream's display
  /// matrix (a phone's rotate tag) snapped to the nearest quarter turn, mirrored where the
  /// matrix mirrors. The transforms the ffmpeg CLI's autorotate inserts for the same matrix.
  uint8_t orientation = 1;

  /// True when the displayed frame is the coded one turned a quarter (orientation 5 to 8).
  bool transposed() const { return orientation >= 5; }
  /// The frame size as displayed, in pixels.
  uint32_t display_width() const { return transposed() ? height : width; }
  uint32_t display_height() const { return transposed() ? width : height; }
};

/// The audio stream a probe reads from the container header (the first audio stream).
struct AudioStreamInfo {
  int stream_index = -1;
  std::string codec;         // "aac", "mp3", "flac", "vorbis", "pcm_s16le", ...
  uint32_t sample_rate = 0;  // Hz
  uint32_t channels = 0;
  double duration_seconds = 0;
};

/// What a probe of a video or audio file learns without decoding.
struct AvInfo {
  std::string container;  // FFmpeg's demuxer name: "mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", ...
  double duration_seconds = 0;  // the longest of the container's and its streams' durations
  std::optional<VideoStreamInfo> video;
  std::optional<AudioStreamInfo> audio;
};

/// Read a video or audio file's container, codecs, sizes, rates and durations from memory,
/// through FFmpeg's demuxers (mp4/mov, Matroska/WebM, AVI, WAV, FLAC, MP3, Ogg, ...) without
/// decoding a frame. Stream parameters come from the header; when a header leaves one out
/// (some MP3s, raw streams) a few packets are parsed for it. Never touches the file system
/// or the network, whatever the container references.
/// Errors: InvalidArgument (empty, not a supported container, no audio or video stream, a
/// codec FFmpeg cannot decode, a value above `limits`, naming which), Corrupt (truncated or
/// malformed header, zero size, zero or no frame rate, zero-length audio, zero channels or
/// sample rate). Thread safety: reentrant. On first use of any video or audio function, FFmpeg's
/// process-wide settings change: its log is silenced and no single allocation may exceed
/// 512 MB (headers declaring gigabyte chunks otherwise cost seconds).
Result<AvInfo> ProbeAv(std::span<const std::byte> bytes, const AvLimits& limits = {});

}  // namespace mmpt::media
