#include "mmpt/cp/image_layout.h"

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
    const uint64_t k = end - next, text = seq_lengths[seq] - image_tokens, gap = text / (k + 1);
    uint64_t at = seq_start;
    for (size_t i = next; i < end; ++i) {
      at += gap;
      placed.push_back(CpImage{static_cast<uint32_t>(at), images[i].token_count,
                               images[i].vision_cost});
      at += images[i].token_count;
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
