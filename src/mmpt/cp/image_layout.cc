#include "mmpt/cp/image_layout.h"

#include "mmpt/cost/sample_table.h"

namespace mmpt::cp {

Result<std::vector<CpImage>> PlaceImages(std::span<const uint32_t> seq_lengths,
                                         std::span<const SampleImage> images) {
  std::vector<CpImage> placed;
  placed.reserve(images.size());
  uint64_t seq_start = 0;
  size_t next = 0;
  for (uint32_t seq = 0; seq < seq_lengths.size(); ++seq) {
    size_t end = next;
    uint64_t image_tokens = 0;
    while (end < images.size() && images[end].seq == seq) image_tokens += images[end++].token_count;
    if (image_tokens > seq_lengths[seq]) {
      return Status::InvalidArgument("sample {} of the pack: its images hold {} tokens, the "
                                     "sample only {}", seq, image_tokens, seq_lengths[seq]);
    }
    const auto text = static_cast<uint32_t>(seq_lengths[seq] - image_tokens);
    uint64_t image_tokens_before = 0;
    for (size_t i = next; i < end; ++i) {
      const uint64_t at =
          seq_start + cost::SpreadTextPosition(text, i - next, end - next) + image_tokens_before;
      placed.push_back(CpImage{static_cast<uint32_t>(at), images[i].token_count,
                               images[i].vision_cost});
      image_tokens_before += images[i].token_count;
    }
    seq_start += seq_lengths[seq];
    next = end;
  }
  if (next != images.size()) {
    return Status::InvalidArgument("pack image {} names sample {}, out of order or past the "
                                   "pack's {} samples", next, images[next].seq,
                                   seq_lengths.size());
  }
  return placed;
}

}  // namespace mmpt::cp
