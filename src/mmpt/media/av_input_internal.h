#pragma once

// FFmpeg input over bytes in memory, shared by av_probe.cc and video.cc. Private to media.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "mmpt/core/status.h"

extern "C" {
#include <libavformat/avformat.h>
}

namespace mmpt::media::internal {

/// FFmpeg's message for an AVERROR code ("Invalid data found when processing input").
std::string AvErrorString(int error);

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

}  // namespace mmpt::media::internal
