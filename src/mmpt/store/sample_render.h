#pragma once

// How a stored sample becomes the token stream the LLM sees: its segments, in order, through
// the dataset's chat template. `mmpt prepare` renders with it to count tokens and place images
// (.meta, .tok); the loader renders with it again to get the same ids and their targets.

#include <vector>

#include "mmpt/core/status.h"
#include "mmpt/text/chat_template.h"

namespace mmpt::store {

/// Render `sample` (a Sample or a SampleView) through `renderer` into `out`: each segment is
/// one piece of its role and turn. Errors: those of text::ChatRenderer::Render.
template <typename SampleT>
Status RenderSample(const text::ChatRenderer& renderer, const SampleT& sample,
                    text::RenderedText* out) {
  std::vector<text::ChatPiece> pieces;
  pieces.reserve(sample.segments.size());
  for (const auto& segment : sample.segments) {
    pieces.push_back({segment.role, segment.turn, segment.is_media, segment.text});
  }
  return renderer.Render(pieces, out);
}

}  // namespace mmpt::store
