#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::cost {

/// Width and height of one image in pixels.
struct ImageSize {
  uint32_t width = 0;
  uint32_t height = 0;
};

/// The planner's input: every sample's planning facts, as a compact struct of arrays. Samples
/// are grouped by source (source s owns rows [source_begin[s], source_begin[s+1])), so a
/// sample is named by (source, index within source) and found by row = begin + index.
/// Both input paths fill it: metadata-only JSONL and a prepared dataset's `.meta` tables.
/// Memory: 12 bytes per sample for the text and image ranges, 12 bytes per image.
struct SampleTable {
  std::vector<std::string> source_names;  // one per source
  std::vector<uint64_t> source_begin;     // sources + 1 row offsets
  std::vector<uint32_t> text_tokens;      // per sample: text tokens (template included)
  std::vector<uint64_t> image_begin;      // samples + 1: images of row r are [image_begin[r], +1)
  std::vector<ImageSize> images;          // per image, sample by sample
  /// Per image: the text tokens of its sample that precede it (non-decreasing within a sample,
  /// at most the sample's text tokens). With the image tokens before it, the image's exact
  /// token position in the sample.
  std::vector<uint32_t> image_text_positions;

  size_t num_samples() const { return text_tokens.size(); }
  size_t num_sources() const { return source_names.size(); }
  size_t num_images() const { return images.size(); }
  uint64_t source_size(size_t s) const { return source_begin[s + 1] - source_begin[s]; }
  /// The source a row belongs to (binary search over source_begin).
  uint32_t SourceOfRow(uint64_t row) const;
  std::span<const ImageSize> ImagesOf(uint64_t row) const {
    return std::span<const ImageSize>(images).subspan(image_begin[row],
                                                      image_begin[row + 1] - image_begin[row]);
  }
};

/// The text position of image `i` of `count` images in a sample of `text_tokens` text tokens
/// when the input does not say where its images sit: spread evenly, `count` + 1 gaps of
/// ⌊text_tokens / (count + 1)⌋ tokens (the last gap takes the remainder), so a caption pair's
/// image sits mid-sample and an interleaved document's images are spaced like paragraphs.
uint32_t SpreadTextPosition(uint32_t text_tokens, size_t i, size_t count);

/// Build a SampleTable from samples given in any source order.
/// Not thread-safe.
class SampleTableBuilder {
 public:
  /// Register a source and return its id (ids count up from 0 in registration order).
  uint32_t AddSource(std::string name);
  /// Add one sample of `source`: its text tokens, its images in token order and the text tokens
  /// before each (`text_positions`, one per image; empty: SpreadTextPosition). Errors:
  /// InvalidArgument for an unknown source, a sample with no tokens and no images (zero
  /// length), an image with a zero side, or text positions that are not one per image,
  /// non-decreasing and at most text_tokens; the caller adds the file and line.
  Status Add(uint32_t source, uint32_t text_tokens, std::span<const ImageSize> images,
             std::span<const uint32_t> text_positions = {});
  /// Group the samples by source (stable within a source) and return the table.
  /// Errors: InvalidArgument if there are no samples at all.
  Result<SampleTable> Finish() &&;

 private:
  std::vector<std::string> names_;
  std::vector<uint32_t> source_;
  std::vector<uint32_t> text_tokens_;
  std::vector<uint64_t> image_begin_{0};
  std::vector<ImageSize> images_;
  std::vector<uint32_t> positions_;
};

}  // namespace mmpt::cost
