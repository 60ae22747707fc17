#include "mmpt/media/av_probe.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "mmpt/media/av_input_internal.h"

extern "C" {
#include <libavcodec/avcodec.h>
}

namespace mmpt::media {
namespace {

using internal::AvInput;

double Seconds(int64_t duration, AVRational time_base) {
  if (duration == AV_NOPTS_VALUE || duration <= 0 || time_base.den == 0) return 0;
  return static_cast<double>(duration) * av_q2d(time_base);
}

// The display matrix as an EXIF orientation code. The matrix maps a coded pixel (x, y) to the
// displayed (a·x + c·y, b·x + d·y) (libavutil/display.h: a, b, c, d = m[0], m[1], m[3], m[4]).
// Snapped to a quarter turn it is either diagonal (each displayed axis is the coded one, reversed
// where a or d < 0) or anti-diagonal (the axes swap, reversed where b or c < 0): one of the
// eight codes. These are the transpose, hflip and vflip filters the ffmpeg CLI inserts.
uint8_t Orientation(const AVStream* stream) {
  size_t size = 0;
  const uint8_t* side = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
  if (side == nullptr || size < 9 * sizeof(int32_t)) return 1;
  int32_t m[9];
  std::memcpy(m, side, sizeof(m));
  const double a = m[0], b = m[1], c = m[3], d = m[4];
  if (std::fabs(a) + std::fabs(d) >= std::fabs(b) + std::fabs(c)) {
    if (a == 0 || d == 0) return 1;  // degenerate: shown as coded
    // Displayed x from coded x, reversed when a < 0; y likewise with d.
    static constexpr uint8_t kDiagonal[2][2] = {{1, 4}, {2, 3}};  // [a < 0][d < 0]
    return kDiagonal[a < 0][d < 0];
  }
  if (b == 0 || c == 0) return 1;
  // Displayed x from coded y (reversed when c < 0), displayed y from coded x (when b < 0).
  static constexpr uint8_t kAntiDiagonal[2][2] = {{5, 6}, {8, 7}};  // [b < 0][c < 0]
  return kAntiDiagonal[b < 0][c < 0];
}

bool IsVideo(const AVStream* s) {
  return s->codecpar->codec_type == AVMEDIA_TYPE_VIDEO &&
         (s->disposition & AV_DISPOSITION_ATTACHED_PIC) == 0;
}
bool IsAudio(const AVStream* s) { return s->codecpar->codec_type == AVMEDIA_TYPE_AUDIO; }

// True when the header left out a parameter the probe reports, so packets must be parsed.
bool NeedsStreamInfo(const AVStream* s) {
  const AVCodecParameters* p = s->codecpar;
  if (IsVideo(s)) {
    return p->width <= 0 || p->height <= 0 ||
           (s->avg_frame_rate.num <= 0 && s->r_frame_rate.num <= 0);
  }
  if (IsAudio(s)) return p->sample_rate <= 0 || p->ch_layout.nb_channels <= 0;
  return false;
}

Result<std::string> DecoderName(const AVStream* s) {
  const AVCodec* decoder = avcodec_find_decoder(s->codecpar->codec_id);
  if (s->codecpar->codec_id == AV_CODEC_ID_NONE || decoder == nullptr) {
    char tag[AV_FOURCC_MAX_STRING_SIZE] = {};
    av_fourcc_make_string(tag, s->codecpar->codec_tag);
    return Status::InvalidArgument("media: stream {}: unknown codec (tag '{}'), no decoder",
                                   s->index, tag);
  }
  return std::string(decoder->name);
}

Result<VideoStreamInfo> ReadVideo(const AVFormatContext* format, const AVStream* s,
                                  const AvLimits& limits) {
  VideoStreamInfo v;
  v.stream_index = s->index;
  MMPT_ASSIGN_OR_RETURN(v.codec, DecoderName(s));
  const AVCodecParameters* p = s->codecpar;
  if (p->width <= 0 || p->height <= 0) {
    return Status::Corrupt("media: video stream {}: frame size {}x{}", s->index, p->width,
                           p->height);
  }
  v.width = static_cast<uint32_t>(p->width);
  v.height = static_cast<uint32_t>(p->height);
  if (uint64_t{v.width} * v.height > limits.max_frame_pixels) {
    return Status::InvalidArgument("media: video frame {}x{} is above the limit of {} pixels",
                                   v.width, v.height, limits.max_frame_pixels);
  }
  AVRational rate =
      s->avg_frame_rate.num > 0 && s->avg_frame_rate.den > 0 ? s->avg_frame_rate : s->r_frame_rate;
  if (rate.num <= 0 || rate.den <= 0) {
    return Status::Corrupt("media: video stream {}: no frame rate", s->index);
  }
  v.fps = av_q2d(rate);
  v.duration_seconds = Seconds(s->duration, s->time_base);
  if (v.duration_seconds == 0 && format->duration != AV_NOPTS_VALUE && format->duration > 0) {
    v.duration_seconds = static_cast<double>(format->duration) / AV_TIME_BASE;
  }
  if (!(v.duration_seconds <= limits.max_duration_seconds)) {
    return Status::InvalidArgument("media: video of {:.0f} s is above the limit of {:.0f} s",
                                   v.duration_seconds, limits.max_duration_seconds);
  }
  if (s->nb_frames > 0) {
    v.frames = static_cast<uint64_t>(s->nb_frames);
    v.frames_exact = true;
  } else {
    v.frames = static_cast<uint64_t>(std::llround(v.duration_seconds * v.fps));
  }
  if (v.frames == 0) return Status::Corrupt("media: video stream {} has no frames", s->index);
  if (v.frames > limits.max_frames) {
    return Status::InvalidArgument("media: video of {} frames is above the limit of {}", v.frames,
                                   limits.max_frames);
  }
  v.orientation = Orientation(s);
  return v;
}

Result<AudioStreamInfo> ReadAudio(const AVFormatContext* format, const AVStream* s,
                                  const AvLimits& limits) {
  AudioStreamInfo a;
  a.stream_index = s->index;
  MMPT_ASSIGN_OR_RETURN(a.codec, DecoderName(s));
  const AVCodecParameters* p = s->codecpar;
  if (p->ch_layout.nb_channels <= 0) {
    return Status::Corrupt("media: audio stream {} has 0 channels", s->index);
  }
  if (p->sample_rate <= 0) {
    return Status::Corrupt("media: audio stream {} has sample rate 0", s->index);
  }
  a.channels = static_cast<uint32_t>(p->ch_layout.nb_channels);
  a.sample_rate = static_cast<uint32_t>(p->sample_rate);
  if (a.channels > limits.max_audio_channels || a.sample_rate > limits.max_sample_rate) {
    return Status::InvalidArgument(
        "media: audio of {} channels at {} Hz is above the limit of {} channels at {} Hz",
        a.channels, a.sample_rate, limits.max_audio_channels, limits.max_sample_rate);
  }
  a.duration_seconds = Seconds(s->duration, s->time_base);
  if (a.duration_seconds == 0 && format->duration != AV_NOPTS_VALUE && format->duration > 0) {
    a.duration_seconds = static_cast<double>(format->duration) / AV_TIME_BASE;
  }
  if (a.duration_seconds <= 0) {
    return Status::Corrupt("media: audio stream {} has zero length", s->index);
  }
  if (!(a.duration_seconds <= limits.max_duration_seconds)) {
    return Status::InvalidArgument("media: audio of {:.0f} s is above the limit of {:.0f} s",
                                   a.duration_seconds, limits.max_duration_seconds);
  }
  return a;
}

}  // namespace

Result<AvInfo> ProbeAv(std::span<const std::byte> bytes, const AvLimits& limits) {
  MMPT_ASSIGN_OR_RETURN(std::unique_ptr<AvInput> input, AvInput::Open(bytes));
  AVFormatContext* format = input->format();
  const AVStream* video = nullptr;
  const AVStream* audio = nullptr;
  for (unsigned i = 0; i < format->nb_streams; ++i) {
    const AVStream* s = format->streams[i];
    if (video == nullptr && IsVideo(s)) video = s;
    if (audio == nullptr && IsAudio(s)) audio = s;
  }
  if (video == nullptr && audio == nullptr) {
    return Status::InvalidArgument("media: {} holds no audio or video stream",
                                   format->iformat->name);
  }
  if ((video != nullptr && NeedsStreamInfo(video)) ||
      (audio != nullptr && NeedsStreamInfo(audio))) {
    // Parses packets, and may decode a few, to fill what the header left out.
    int error = avformat_find_stream_info(format, nullptr);
    if (error < 0) {
      return Status::Corrupt("media: cannot read stream parameters: {}",
                             internal::AvErrorString(error));
    }
  }
  AvInfo info;
  info.container = format->iformat->name;
  if (video != nullptr) {
    MMPT_ASSIGN_OR_RETURN(info.video, ReadVideo(format, video, limits));
    info.duration_seconds = info.video->duration_seconds;
  }
  if (audio != nullptr) {
    MMPT_ASSIGN_OR_RETURN(info.audio, ReadAudio(format, audio, limits));
    info.duration_seconds = std::max(info.duration_seconds, info.audio->duration_seconds);
  }
  return info;
}

}  // namespace mmpt::media
