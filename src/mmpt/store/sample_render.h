#pragma once

// How a stored sample becomes the token stream the LLM sees: its segments, in order, through
// the dataset's chat template. `mmpt prepare` renders with it to count tokens and place images
// (.meta, .tok); the loader renders with it again to get the same ids and their targets.

#include <span>
#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/media/video.h"
#include "mmpt/store/meta.h"
#include "mmpt/text/chat_template.h"

namespace mmpt::store {

/// The template markers a media item renders with: its own kind's.
inline text::PieceKind PieceKindOf(MediaKind kind) {
  switch (kind) {
    case MediaKind::kVideo: return text::PieceKind::kVideo;
    case MediaKind::kAudio: return text::PieceKind::kAudio;
    case MediaKind::kImage: break;
  }
  return text::PieceKind::kImage;
}

/// The time of each temporal group of video `ref` sampled by `rule` (media::SampleVideo from
/// its recorded frames, rate, size and clip; VideoSampling::GroupSeconds). Errors: InvalidArgument
/// when `rule` is null (the preset cannot encode video) or the video cannot be sampled.
template <typename MediaRefT>
Result<std::vector<double>> VideoGroupSeconds(const MediaRefT& ref,
                                              const media::VideoSamplingRule* rule) {
  if (rule == nullptr) {
    return Status::InvalidArgument("the vision preset cannot encode video");
  }
  MMPT_ASSIGN_OR_RETURN(media::VideoSampling sampling,
                        media::SampleVideo(ref.frames, ref.fps_milli / 1000.0, ref.height,
                                           ref.width, *rule, {ref.start_ms, ref.end_ms}));
  return sampling.GroupSeconds(rule->frame_factor);
}

/// Render `sample` (a Sample or a SampleView) through `renderer` into `out`: each segment is
/// one piece of its role and turn, a media segment with its kind's markers. Under a template
/// that writes a video's groups with timestamps, each video is sampled by `video_rule` (from
/// its recorded frames, rate and size) for its groups' times; null: the preset cannot encode
/// video. Errors: those of text::ChatRenderer::Render; InvalidArgument for a video that cannot
/// be sampled, naming it. `sound_items`, when given, has per medium (Sample::media order) the
/// items of a video written with its sound track (text::ChatPiece::sound_items), else 0.
template <typename SampleT>
Status RenderSample(const text::ChatRenderer& renderer, const SampleT& sample,
                    const media::VideoSamplingRule* video_rule, text::RenderedText* out,
                    std::span<const uint32_t> sound_items = {}) {
  const text::MediaMarkers* video = renderer.chat().markers(text::PieceKind::kVideo);
  const bool timestamps = video != nullptr && !video->timestamp.empty();
  std::vector<std::vector<double>> seconds(timestamps ? sample.media.size() : 0);
  std::vector<text::ChatPiece> pieces;
  pieces.reserve(sample.segments.size());
  for (const auto& segment : sample.segments) {
    text::ChatPiece piece{segment.role, segment.turn, text::PieceKind::kText, segment.text, {}};
    if (segment.is_media) {  // an index out of range is ValidateSample's to refuse
      const bool known = segment.media_index < sample.media.size();
      piece.kind =
          known ? PieceKindOf(sample.media[segment.media_index].kind) : text::PieceKind::kImage;
      if (known && segment.media_index < sound_items.size()) {
        piece.sound_items = sound_items[segment.media_index];
      }
      if (timestamps && piece.kind == text::PieceKind::kVideo) {
        MMPT_ASSIGN_OR_RETURN(seconds[segment.media_index],
                              VideoGroupSeconds(sample.media[segment.media_index], video_rule));
        piece.group_seconds = seconds[segment.media_index];
      }
    }
    pieces.push_back(piece);
  }
  return renderer.Render(pieces, out);
}

}  // namespace mmpt::store
