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
      return Status::InvalidArgument(
          "sample {} of the pack: its images hold {} tokens, the "
          "sample only {}",
          seq, image_tokens, seq_lengths[seq]);
    }
    std::vector<uint32_t> counts;
    for (size_t i = next; i < end; ++i) counts.push_back(images[i].token_count);
    const std::vector<uint32_t> starts =
        cost::SpreadImageStarts(static_cast<uint32_t>(seq_lengths[seq] - image_tokens), counts);
    for (size_t i = next; i < end; ++i) {
      placed.push_back(CpImage{static_cast<uint32_t>(seq_start + starts[i - next]),
                               images[i].token_count, images[i].vision_cost});
    }
    seq_start += seq_lengths[seq];
    next = end;
  }
  if (next != images.size()) {
    return Status::InvalidArgument(
        "pack image {} names sample {}, out of order or past the "
        "pack's {} samples",
        next, images[next].seq, seq_lengths.size());
  }
  return placed;
}

}  // namespace mmpt::cp
