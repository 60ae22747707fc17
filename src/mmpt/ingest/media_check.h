#pragma once

// prepare's check of one media item: its bytes read (from disk, or a tar member's), its header
// probed without decoding, and its size held to the decode budget and the vision preset.

#include <cstdint>
#include <optional>
#include <string>

#include "mmpt/core/status.h"
#include "mmpt/cost/vision_model.h"
#include "mmpt/store/sample.h"
#include "mmpt/store/shard_writer.h"

namespace mmpt::ingest {

/// What a media item is checked against.
struct MediaRules {
  const cost::VisionConfig& vision;  // its resolution rule must accept an image's size
  uint64_t max_decode_pixels = 0;    // an image's stored width × height at most
  std::string root;                  // relative media paths are under it
};

/// Load (from disk under `rules.root`, unless `bytes` holds them already: a tar member's),
/// probe and check one media item: fills `blob` (its bytes, an image's format) and the item's
/// size (an image's as displayed, after EXIF orientation), and a video's or audio clip's length
/// and rates; adds the bytes read to `input_bytes`. A metadata-only item keeps its given facts.
/// Errors: NotFound/IOError (a file), Corrupt/InvalidArgument (a header that does not probe, a
/// size rejected), each naming the item, with `reason` the count a skip is reported under.
Status LoadMedia(const MediaRules& rules, store::MediaRef& media, std::optional<std::string> bytes,
                 store::MediaBlob& blob, uint64_t& input_bytes, std::string& reason);

}  // namespace mmpt::ingest
