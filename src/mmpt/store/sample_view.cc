#include "mmpt/store/sample_view.h"

#include "mmpt/store/sample_validate_internal.h"

namespace mmpt::store {

Sample SampleView::ToSample() const {
  Sample sample;
  sample.key = std::string(key);
  sample.source = std::string(source);
  sample.segments.reserve(segments.size());
  for (const SegmentView& view : segments) {
    Segment& segment = sample.segments.emplace_back();
    segment.role = std::string(view.role);
    segment.turn = view.turn;
    segment.is_media = view.is_media;
    segment.text = std::string(view.text);
    segment.media_index = view.media_index;
  }
  sample.media.reserve(media.size());
  for (const MediaView& view : media) {
    sample.media.push_back({std::string(view.path), std::string(view.entry), view.width,
                            view.height, view.frames, view.kind, view.duration_ms, view.fps_milli,
                            view.sample_rate_hz});
  }
  return sample;
}

Status ValidateSample(const SampleView& sample) { return internal::ValidateSampleOf(sample); }

}  // namespace mmpt::store
