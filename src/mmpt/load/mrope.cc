#include "mmpt/load/mrope.h"

#include <algorithm>
#include <vector>

namespace mmpt::load {

void MropePositions(const RenderedSample& sample, uint32_t merge_size, float tokens_per_second,
                    uint32_t pad, std::span<int32_t> t, std::span<int32_t> h,
                    std::span<int32_t> w) {
  const uint32_t n = static_cast<uint32_t>(sample.tokens.size()) + pad;
  int32_t next = 0;  // position of the next text token (one past the largest so far)
  uint32_t i = 0;
  auto text_until = [&](uint32_t end) {
    for (; i < end; ++i) t[i] = h[i] = w[i] = next++;
  };
  size_t block = 0;  // the next sound track's block
  // Blocks that start before `end`: each written whole, its visuals skipped below.
  auto blocks_until = [&](uint32_t end) {
    for (; block < sample.sound_tracks.size() && sample.sound_tracks[block].token_start < end;
         ++block) {
      const RenderedSoundTrack& s = sample.sound_tracks[block];
      text_until(s.token_start);
      const uint32_t size = s.item.block_tokens();
      std::vector<int32_t> bt(size), bh(size), bw(size);
      next = media::AudioInVideoPositions(s.rule, s.item, media::AudioInVideoRuns(s.rule, s.item),
                                          next, bt, bh, bw);
      for (uint32_t k = 0; k < size && i < n; ++k, ++i) {
        t[i] = bt[k];
        h[i] = bh[k];
        w[i] = bw[k];
      }
    }
  };
  for (const RenderedVisual& image : sample.visuals) {
    blocks_until(image.token_start);
    if (image.token_start < i) continue;  // a group of a block written already
    text_until(image.token_start);
    const uint32_t gh = image.grid_h / merge_size;
    const uint32_t gw = image.grid_w / merge_size;
    const int32_t start = next;
    int32_t largest = start - 1;
    const bool aligned = image.video && tokens_per_second > 0;
    for (uint32_t f = 0; f < image.grid_t; ++f) {
      // float32 products, truncated, as torch computes arange(t) · second_per_grid_t · tps.
      const float seconds = static_cast<float>(f) * image.second_per_grid_t;
      const int32_t time =
          aligned ? static_cast<int32_t>(seconds * tokens_per_second) : static_cast<int32_t>(f);
      for (uint32_t y = 0; y < gh; ++y) {
        for (uint32_t x = 0; x < gw; ++x, ++i) {
          t[i] = start + time;
          h[i] = start + static_cast<int32_t>(y);
          w[i] = start + static_cast<int32_t>(x);
          largest = std::max({largest, t[i], h[i], w[i]});
        }
      }
    }
    next = largest + 1;
  }
  blocks_until(n);
  text_until(n);
}

}  // namespace mmpt::load
