#pragma once

// FFmpeg input over bytes in memory, shared by av_probe.cc, video.cc and audio.cc. Private to
// media.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "mmpt/core/status.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

namespace mmpt::media::internal {

/// FFmpeg's message for an AVERROR code ("Invalid data found when processing input").
std::string AvErrorString(int error);

/// unique_ptr deleters of FFmpeg's decoding objects.
struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct CodecDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};

/// Where the demuxer's reads are in the byte span.
struct MemoryReader {
  const uint8_t* data = nullptr;
  int64_t size = 0;
  int64_t pos = 0;
};

/// A demuxer reading a byte span through a custom AVIOContext: no temporary files, and no
/// nested opens (playlists, references to other files are refused). Owns the format context
/// and the I/O context; the bytes must outlive it. Not thread-safe; one per thread.
class AvInput {
 public:
  /// Open the container and read its header (no decoding). Only the demuxers of common video
  /// and audio containers are allowed.
  /// Errors: InvalidArgument (empty, or not a recognized container), Corrupt (the demuxer
  /// rejects the header: truncated, malformed).
  static Result<std::unique_ptr<AvInput>> Open(std::span<const std::byte> bytes);
  ~AvInput();
  AvInput(const AvInput&) = delete;
  AvInput& operator=(const AvInput&) = delete;

  AVFormatContext* format() const { return format_; }

 private:
  AvInput() = default;

  MemoryReader reader_;
  AVIOContext* io_ = nullptr;
  AVFormatContext* format_ = nullptr;
};

/// Decodes one stream of an AvInput forward from wherever its demuxer was last put, one
/// thread, strictly: a packet that does not decode is an error, not a skipped frame.
class FrameReader {
 public:
  FrameReader(AVFormatContext* format, int stream) : format_(format), stream_(stream) {}

  /// Open the stream's decoder. Errors: InvalidArgument (no decoder), Corrupt (it refuses
  /// the stream's parameters), Internal (out of memory).
  Status Init();
  /// Seek to the keyframe at or before `keyframe_pts` (the stream's time base).
  Status SeekTo(int64_t keyframe_pts);
  /// The next decoded frame in presentation order, or null at the end of the stream; valid
  /// until the next call. Errors: Corrupt (a packet that cannot be read or decoded).
  Result<const AVFrame*> Next();

 private:
  Status SendPacket();

  AVFormatContext* format_;
  int stream_;
  std::unique_ptr<AVCodecContext, CodecDeleter> codec_;
  std::unique_ptr<AVPacket, PacketDeleter> packet_;
  std::unique_ptr<AVFrame, FrameDeleter> frame_;
  bool draining_ = false;
};

}  // namespace mmpt::media::internal
