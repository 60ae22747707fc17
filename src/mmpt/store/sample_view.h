#pragma once

// A canonical sample read in place: the same fields as Sample, with strings as views into the
// shard line they were read from (zero-copy), so a random read allocates nothing in the steady
// state.

#include <cstdint>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/store/sample.h"

namespace mmpt::store {

/// One segment of a SampleView; see Segment.
struct SegmentView {
  std::string_view role;     // "" for plain documents
  std::string_view text;     // UTF-8, when !is_media
  uint32_t turn = 0;         // conversation turn
  uint32_t media_index = 0;  // index into SampleView::media, when is_media
  bool is_media = false;
};

/// One media item of a SampleView; see MediaRef.
struct MediaView {
  std::string_view path;   // empty for a metadata-only item
  std::string_view entry;  // name in the shard's zip; empty for a metadata-only item
  uint32_t width = 0;      // pixels
  uint32_t height = 0;     // pixels
  uint32_t frames = 1;
  MediaKind kind = MediaKind::kImage;
  uint32_t duration_ms = 0;
  uint32_t fps_milli = 0;
  uint32_t sample_rate_hz = 0;
  uint32_t start_ms = 0;  // as MediaRef's
  uint32_t end_ms = 0;

  bool metadata_only() const { return path.empty() && entry.empty(); }
};

/// A canonical sample whose strings point into the line it was read from when the line spells
/// them without escapes, and into a buffer the view owns otherwise (the unescaped copy).
/// Filled by ReadSampleLine (Dataset::ReadSample); reading into the same view again reuses its
/// vectors' capacity. Validity: the views stay valid while the line's storage (for a Dataset:
/// the Dataset) lives and the view is neither destroyed nor read into again. Moving keeps
/// them valid; copying is not allowed (the copy's views would point into the original).
/// Thread safety: none; one view per thread.
class SampleView {
 public:
  SampleView() = default;
  SampleView(SampleView&&) noexcept = default;
  SampleView& operator=(SampleView&&) noexcept = default;
  SampleView(const SampleView&) = delete;
  SampleView& operator=(const SampleView&) = delete;

  std::string_view key;
  std::string_view source;
  std::vector<SegmentView> segments;
  std::vector<MediaView> media;

  /// An owning copy, for callers that keep the sample past the line's or the view's lifetime.
  Sample ToSample() const;

 private:
  friend Status ReadSampleLine(std::string_view line, SampleView& out);
  // Unescaped copies of strings that had escapes. Reserved to the line's length before a read
  // (unescaping never lengthens a string), so it never reallocates while views point into it.
  std::vector<char> unescaped_;
};

/// ValidateSample's checks (see sample.h) on a view. Errors: InvalidArgument.
Status ValidateSample(const SampleView& sample);

}  // namespace mmpt::store
