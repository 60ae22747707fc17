#pragma once

// How a stored sample becomes the token stream the LLM sees: its segments, in order, through
// the dataset's chat template. `mmpt prepare` renders with it to count tokens and place images
// (.meta, .tok); the loader renders with it again to get the same ids and their targets.

#include <vector>

#include "mmpt/core/status.h"
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

/// Render `sample` (a Sample or a SampleView) through `renderer` into `out`: each segment is
/// one piece of its role and turn, a media segment with its kind's markers. Errors: those of
/// text::ChatRenderer::Render.
template <typename SampleT>
Status RenderSample(const text::ChatRenderer& renderer, const SampleT& sample,
                    text::RenderedText* out) {
  std::vector<text::ChatPiece> pieces;
  pieces.reserve(sample.segments.size());
  for (const auto& segment : sample.segments) {
    text::PieceKind kind = text::PieceKind::kText;
    if (segment.is_media) {  // an index out of range is ValidateSample's to refuse
      kind = segment.media_index < sample.media.size()
                 ? PieceKindOf(sample.media[segment.media_index].kind)
                 : text::PieceKind::kImage;
    }
    pieces.push_back({segment.role, segment.turn, kind, segment.text});
  }
  return renderer.Render(pieces, out);
}

}  // namespace mmpt::store
