#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string_view>
#include <vector>

#include "mmpt/media/av_input_internal.h"

extern "C" {
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
}

namespace mmpt::media::internal {
namespace {

constexpr int kIoBufferBytes = 32 << 10;
// Header reads of any allowed container stay far below this; it bounds the work a hostile
// file can cause while the demuxer looks for stream parameters.
constexpr int64_t kProbeBytes = 4 << 20;
// Demuxer names as FFmpeg spells them; everything else (playlists, image sequences, raw
// formats that would open other files or accept any bytes) is refused.
constexpr std::string_view kAllowedDemuxers[] = {"mov,mp4,m4a,3gp,3g2,mj2",
                                                 "matroska,webm",
                                                 "avi",
                                                 "wav",
                                                 "flac",
                                                 "mp3",
                                                 "ogg",
                                                 "aac",
                                                 "mpegts",
                                                 "flv",
                                                 "asf",
                                                 "aiff",
                                                 "caf",
                                                 "w64"};
// Leading bytes the container is told from, as FFmpeg's own probing reads them.
constexpr size_t kSniffBytes = 1 << 20;

int ReadPacket(void* opaque, uint8_t* buf, int buf_size) {
  auto* r = static_cast<MemoryReader*>(opaque);
  int64_t n = std::min<int64_t>(buf_size, r->size - r->pos);
  if (n <= 0) return AVERROR_EOF;
  std::memcpy(buf, r->data + r->pos, static_cast<size_t>(n));
  r->pos += n;
  return static_cast<int>(n);
}

int64_t Seek(void* opaque, int64_t offset, int whence) {
  auto* r = static_cast<MemoryReader*>(opaque);
  whence &= ~AVSEEK_FORCE;
  if (whence == AVSEEK_SIZE) return r->size;
  int64_t base = whence == SEEK_SET   ? 0
                 : whence == SEEK_CUR ? r->pos
                 : whence == SEEK_END ? r->size
                                      : -1;
  int64_t target = 0;
  if (base < 0 || __builtin_add_overflow(base, offset, &target) || target < 0 || target > r->size) {
    return AVERROR(EINVAL);
  }
  r->pos = target;
  return target;
}

// Containers that name other files (playlists, references in mov) must not reach the disk or
// the network: every nested open is refused.
int RefuseNestedOpen(AVFormatContext*, AVIOContext**, const char*, int, AVDictionary**) {
  return AVERROR(EPERM);
}

// Process-wide FFmpeg settings, made once: errors come back as Status values, so FFmpeg's own
// log lines would only repeat them; and no single allocation may exceed kMaxAllocBytes, which
// stops headers that declare gigabyte chunks (a WAV LIST chunk of 1.5 GB made the demuxer
// allocate and read it for seconds) without limiting real frames (8192² YUV is ~100 MB).
constexpr size_t kMaxAllocBytes = size_t{512} << 20;
void InitFfmpeg() {
  static const bool once = [] {
    av_log_set_level(AV_LOG_QUIET);
    av_max_alloc(kMaxAllocBytes);
    return true;
  }();
  (void)once;
}

// Tell the container from the leading bytes; only allowed demuxers pass.
Result<const AVInputFormat*> DetectContainer(std::span<const std::byte> bytes) {
  size_t n = std::min(bytes.size(), kSniffBytes);
  std::vector<uint8_t> padded(n + AVPROBE_PADDING_SIZE, 0);  // FFmpeg's probes read past the end
  std::memcpy(padded.data(), bytes.data(), n);
  AVProbeData probe = {};
  probe.filename = "";
  probe.buf = padded.data();
  probe.buf_size = static_cast<int>(n);
  int score = 0;
  const AVInputFormat* demuxer = av_probe_input_format3(&probe, 1, &score);
  if (demuxer == nullptr) {
    return Status::InvalidArgument("media: not a recognized video or audio container");
  }
  if (std::find(std::begin(kAllowedDemuxers), std::end(kAllowedDemuxers), demuxer->name) ==
      std::end(kAllowedDemuxers)) {
    return Status::InvalidArgument("media: container '{}' is not supported", demuxer->name);
  }
  return demuxer;
}

}  // namespace

std::string AvErrorString(int error) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(error, text, sizeof(text));
  return text;
}

Result<std::unique_ptr<AvInput>> AvInput::Open(std::span<const std::byte> bytes) {
  if (bytes.empty()) return Status::InvalidArgument("media: empty input");
  InitFfmpeg();
  std::unique_ptr<AvInput> input(new AvInput());
  input->reader_ = {reinterpret_cast<const uint8_t*>(bytes.data()),
                    static_cast<int64_t>(bytes.size()), 0};
  auto* buffer = static_cast<unsigned char*>(av_malloc(kIoBufferBytes));
  if (buffer == nullptr) return Status::Internal("media: out of memory");
  input->io_ =
      avio_alloc_context(buffer, kIoBufferBytes, 0, &input->reader_, ReadPacket, nullptr, Seek);
  if (input->io_ == nullptr) {
    av_free(buffer);
    return Status::Internal("media: out of memory");
  }
  MMPT_ASSIGN_OR_RETURN(const AVInputFormat* demuxer, DetectContainer(bytes));
  AVFormatContext* format = avformat_alloc_context();
  if (format == nullptr) return Status::Internal("media: out of memory");
  format->pb = input->io_;
  format->flags |= AVFMT_FLAG_CUSTOM_IO;
  format->probesize = kProbeBytes;
  format->io_open = RefuseNestedOpen;
  int error = avformat_open_input(&format, nullptr, demuxer, nullptr);
  if (error < 0) {  // avformat_open_input has freed `format`
    return Status::Corrupt("media: cannot read the {} header: {}", demuxer->name,
                           AvErrorString(error));
  }
  input->format_ = format;
  return input;
}

AvInput::~AvInput() {
  avformat_close_input(&format_);  // does not close custom I/O
  if (io_ != nullptr) {
    av_freep(&io_->buffer);
    avio_context_free(&io_);
  }
}

Status FrameReader::Init() {
  const AVCodecParameters* par = format_->streams[stream_]->codecpar;
  const AVCodec* decoder = avcodec_find_decoder(par->codec_id);
  if (decoder == nullptr) return Status::InvalidArgument("media: no decoder for the stream");
  codec_.reset(avcodec_alloc_context3(decoder));
  packet_.reset(av_packet_alloc());
  frame_.reset(av_frame_alloc());
  if (!codec_ || !packet_ || !frame_) return Status::Internal("media: out of memory");
  int error = avcodec_parameters_to_context(codec_.get(), par);
  if (error >= 0) {
    codec_->thread_count = 1;  // one decode per loader thread; the loader parallelizes
    codec_->pkt_timebase = format_->streams[stream_]->time_base;
    error = avcodec_open2(codec_.get(), decoder, nullptr);
  }
  if (error < 0) return Status::Corrupt("media: cannot open decoder: {}", AvErrorString(error));
  return Status::OK();
}

Status FrameReader::SeekTo(int64_t keyframe_pts) {
  int error = av_seek_frame(format_, stream_, keyframe_pts, AVSEEK_FLAG_BACKWARD);
  if (error < 0) return Status::Corrupt("media: cannot seek: {}", AvErrorString(error));
  avcodec_flush_buffers(codec_.get());
  draining_ = false;
  return Status::OK();
}

Result<const AVFrame*> FrameReader::Next() {
  while (true) {
    int error = avcodec_receive_frame(codec_.get(), frame_.get());
    if (error >= 0) return static_cast<const AVFrame*>(frame_.get());
    if (error == AVERROR_EOF) return static_cast<const AVFrame*>(nullptr);
    if (error != AVERROR(EAGAIN)) {
      return Status::Corrupt("media: cannot decode a frame: {}", AvErrorString(error));
    }
    if (draining_) return static_cast<const AVFrame*>(nullptr);
    MMPT_RETURN_IF_ERROR(SendPacket());
  }
}

Status FrameReader::SendPacket() {
  while (true) {
    int error = av_read_frame(format_, packet_.get());
    if (error == AVERROR_EOF) {
      draining_ = true;
      avcodec_send_packet(codec_.get(), nullptr);
      return Status::OK();
    }
    if (error < 0) return Status::Corrupt("media: cannot read packets: {}", AvErrorString(error));
    if (packet_->stream_index != stream_) {
      av_packet_unref(packet_.get());
      continue;
    }
    error = avcodec_send_packet(codec_.get(), packet_.get());
    av_packet_unref(packet_.get());
    if (error < 0 && error != AVERROR(EAGAIN)) {
      return Status::Corrupt("media: cannot decode a packet: {}", AvErrorString(error));
    }
    return Status::OK();
  }
}

}  // namespace mmpt::media::internal
