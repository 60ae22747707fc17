#include "mmpt/ingest/media_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "mmpt/core/mapped_file.h"
#include "mmpt/ingest/adapter.h"
#include "mmpt/media/audio.h"
#include "mmpt/media/av_probe.h"
#include "mmpt/media/image_probe.h"

namespace mmpt::ingest {
namespace {

namespace fs = std::filesystem;

// The bytes of a media item that names a file, read from disk unless `bytes` holds them
// already (a tar member's).
Status ReadMediaBytes(const MediaRules& rules, const store::MediaRef& media,
                      std::optional<std::string>& bytes, std::string& reason) {
  if (bytes) return Status::OK();
  const std::string_view noun = store::MediaKindName(media.kind);
  fs::path path(media.path);
  if (path.is_relative()) path = fs::path(rules.root) / path;
  auto read = ReadFileToString(path.string());
  if (!read.ok()) {
    reason = fmt::format(
        "{} {}", read.status().code() == StatusCode::kNotFound ? "missing" : "unreadable", noun);
    return Status(read.status().code(),
                  fmt::format("{} '{}': {}", noun, media.path, read.status().message()));
  }
  bytes = std::move(*read);
  return Status::OK();
}

uint32_t Thousandths(double x) {
  return static_cast<uint32_t>(std::clamp<double>(std::llround(x * 1000), 1, UINT32_MAX));
}

// Probe one video or audio item within the probe's budgets, and fill the item's facts from the
// stream of its kind: a video's from its container header, an audio clip's by decoding it.
Status LoadAvMedia(const MediaRules& rules, store::MediaRef& media,
                   std::optional<std::string> bytes, store::MediaBlob& blob, uint64_t& input_bytes,
                   std::string& reason) {
  const std::string_view noun = store::MediaKindName(media.kind);
  if (media.metadata_only()) return Status::OK();
  MMPT_RETURN_IF_ERROR(ReadMediaBytes(rules, media, bytes, reason));
  auto info = media::ProbeAv(std::as_bytes(std::span(*bytes)));
  if (!info.ok()) {
    reason = fmt::format("corrupt or unsupported {}", noun);
    return Status(info.status().code(),
                  fmt::format("{} '{}': {}", noun, media.path, info.status().message()));
  }
  if (media.kind == store::MediaKind::kVideo) {
    if (!info->video) {
      reason = "video without a video stream";
      return Status::InvalidArgument("video '{}': {} holds no video stream", media.path,
                                     info->container);
    }
    const media::VideoStreamInfo& v = *info->video;
    if (v.width > store::kMaxImageSide || v.height > store::kMaxImageSide) {
      reason = "video size rejected";
      return Status::InvalidArgument("video '{}': {}x{} exceeds {} pixels a side", media.path,
                                     v.width, v.height, store::kMaxImageSide);
    }
    // As displayed: frames are decoded turned by the display matrix, so the plan's grid is the
    // rotated frame's.
    media.width = v.display_width();
    media.height = v.display_height();
    media.frames = static_cast<uint32_t>(v.frames);  // the probe holds frames to its budget
    media.fps_milli = Thousandths(v.fps);
    media.duration_ms = Thousandths(v.duration_seconds > 0 ? v.duration_seconds
                                                           : static_cast<double>(v.frames) / v.fps);
  } else {
    if (!info->audio) {
      reason = "audio without an audio stream";
      return Status::InvalidArgument("audio '{}': {} holds no audio stream", media.path,
                                     info->container);
    }
    // The clip's length is its decoded samples: a container's declared duration is not
    // sample-exact (MP3 and AAC priming and padding, Opus pre-skip), and the plan's tokens
    // must be the reference's for what the loader decodes.
    auto decoded = media::DecodeAudio(std::as_bytes(std::span(*bytes)));
    if (!decoded.ok()) {
      reason = "corrupt or unsupported audio";
      return Status(decoded.status().code(),
                    fmt::format("audio '{}': {}", media.path, decoded.status().message()));
    }
    media.frames = static_cast<uint32_t>(decoded->samples.size());
    media.duration_ms = Thousandths(static_cast<double>(media.frames) / decoded->sample_rate);
    media.sample_rate_hz = info->audio->sample_rate;
  }
  input_bytes += bytes->size();
  blob.bytes = std::move(*bytes);
  return Status::OK();
}

}  // namespace

Status LoadMedia(const MediaRules& rules, store::MediaRef& media, std::optional<std::string> bytes,
                 store::MediaBlob& blob, uint64_t& input_bytes, std::string& reason) {
  if (media.kind != store::MediaKind::kImage) {
    return LoadAvMedia(rules, media, std::move(bytes), blob, input_bytes, reason);
  }
  if (!media.metadata_only()) {
    MMPT_RETURN_IF_ERROR(ReadMediaBytes(rules, media, bytes, reason));
    auto info = media::ProbeImage(std::as_bytes(std::span(*bytes)));
    if (!info.ok()) {
      reason = "corrupt or unsupported image";
      return Status(info.status().code(),
                    fmt::format("image '{}': {}", media.path, info.status().message()));
    }
    if (uint64_t{info->width} * info->height > rules.max_decode_pixels) {
      reason = "image above the decode budget";
      return Status::InvalidArgument(
          "image '{}': {}x{} = {} pixels exceeds the decode budget of {} pixels (a possible "
          "decompression bomb; --max-decode-pixels raises it)",
          media.path, info->width, info->height, uint64_t{info->width} * info->height,
          rules.max_decode_pixels);
    }
    bool transposed = info->exif_orientation >= 5 && info->exif_orientation <= 8;
    media.width = transposed ? info->height : info->width;
    media.height = transposed ? info->width : info->height;
    media.frames = std::max<uint32_t>(1, info->frames);
    blob.format = static_cast<uint8_t>(info->format);
    input_bytes += bytes->size();
    blob.bytes = std::move(*bytes);
  }
  if (media.width > store::kMaxImageSide || media.height > store::kMaxImageSide) {
    reason = "image size rejected";
    return Status::InvalidArgument("image '{}': {}x{} exceeds {} pixels a side", media.path,
                                   media.width, media.height, store::kMaxImageSide);
  }
  auto cost = cost::ImageShape(rules.vision, media.width, media.height);
  if (!cost.ok()) {
    reason = "image size rejected";
    return Status::InvalidArgument("image '{}' ({}x{}): {} rejects it: {}", media.path, media.width,
                                   media.height, rules.vision.name, cost.status().message());
  }
  return Status::OK();
}

}  // namespace mmpt::ingest
