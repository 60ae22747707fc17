#pragma once

// ValidateSample's checks, shared by the owning Sample and the SampleView (sample.cc,
// sample_view.cc); not part of the public API.

#include <cstdint>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/meta.h"

namespace mmpt::store::internal {

/// The checks of ValidateSample (sample.h) on anything with `segments` (is_media,
/// media_index) and `media` (metadata_only(), kind, width, height, frames, duration_ms,
/// fps_milli, sample_rate_hz). Allocates nothing unless the
/// sample has more than 64 media items or is invalid. Errors: InvalidArgument.
template <typename SampleT>
Status ValidateSampleOf(const SampleT& sample) {
  const size_t num_media = sample.media.size();
  // Fast path: a bit per item says whether a segment already refers to it.
  bool once_each = num_media <= 64;
  uint64_t seen = 0;
  size_t references = 0;
  for (size_t i = 0; i < sample.segments.size(); ++i) {
    const auto& segment = sample.segments[i];
    if (!segment.is_media) continue;
    if (segment.media_index >= num_media) {
      return Status::InvalidArgument("segment {} refers to media {} of {}", i, segment.media_index,
                                     num_media);
    }
    ++references;
    if (once_each) {
      const uint64_t bit = uint64_t{1} << segment.media_index;
      once_each = (seen & bit) == 0;
      seen |= bit;
    }
  }
  if (!once_each || references != num_media) {
    std::vector<uint32_t> uses(num_media, 0);
    for (const auto& segment : sample.segments) {
      if (segment.is_media) ++uses[segment.media_index];
    }
    for (size_t j = 0; j < num_media; ++j) {
      if (uses[j] != 1) {
        return Status::InvalidArgument("media {} is referred to by {} segments, expected 1", j,
                                       uses[j]);
      }
    }
  }
  for (size_t j = 0; j < num_media; ++j) {
    const auto& media = sample.media[j];
    if ((media.width == 0) != (media.height == 0)) {
      return Status::InvalidArgument("media {} gives only one of width and height", j);
    }
    if ((media.start_ms != 0 || media.end_ms != 0) &&
        (media.kind != MediaKind::kVideo ||
         (media.end_ms != 0 && media.end_ms <= media.start_ms))) {
      return Status::InvalidArgument(
          "media {}: a clip ({} to {} ms) is for a video, ending after "
          "it starts",
          j, media.start_ms, media.end_ms);
    }
    switch (media.kind) {
      case MediaKind::kImage:
        if (media.duration_ms != 0 || media.fps_milli != 0 || media.sample_rate_hz != 0) {
          return Status::InvalidArgument("image {} has a duration, frame rate or sample rate", j);
        }
        if (media.metadata_only() && (media.width == 0 || media.height == 0)) {
          return Status::InvalidArgument("media {} has neither a path nor a positive size", j);
        }
        break;
      case MediaKind::kVideo:
        if (media.sample_rate_hz != 0) {
          return Status::InvalidArgument("video {} has a sample rate", j);
        }
        if (media.metadata_only() && (media.width == 0 || media.height == 0 ||
                                      media.duration_ms == 0 || media.fps_milli == 0)) {
          return Status::InvalidArgument(
              "video {} has neither a path nor a positive size, duration and frame rate", j);
        }
        break;
      case MediaKind::kAudio:
        if (media.width != 0 || media.height != 0 || media.fps_milli != 0) {
          return Status::InvalidArgument("audio {} has a frame size or frame rate", j);
        }
        if (media.metadata_only() && media.duration_ms == 0) {
          return Status::InvalidArgument("audio {} has neither a path nor a positive duration", j);
        }
        break;
      default:
        return Status::InvalidArgument("media {} has unknown kind {}", j,
                                       static_cast<int>(media.kind));
    }
  }
  if (sample.segments.empty()) return Status::InvalidArgument("sample has no segments");
  return Status::OK();
}

}  // namespace mmpt::store::internal
