#pragma once

// The one reader of the real data (RealDataDir(), ../shared/data/real/: see its README): COCO
// val2017 captions and mmc4 core documents, parsed with simdjson into plain structs in file order.
// Every C++ caller (tokenizer tests and benchmarks, the planner's built-in corpora, `mmpt
// synth`, the load and media tests, the image benchmark) reads these files through here.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::corpora {

/// File names of the real data, inside RealDataDir().
inline constexpr const char* kCocoCaptionsFile = "coco_val2017_captions.json";
inline constexpr const char* kMmc4DocsFile = "mmc4_core_ff_docs.jsonl";

/// The directory of the real data: real/ in mmpt's data directory (core/data_dir.h). A build
/// tree links it to ../shared/data/real beside the checkout, as every test, benchmark and
/// built-in corpus reads it; an install has none unless $MMPT_HOME provides one. Without a data
/// directory it is the literal "$MMPT_HOME/real", so that opening a file fails naming it.
std::string RealDataDir();
/// RealDataDir() + "/" + file_name.
std::string RealDataPath(std::string_view file_name);

/// One entry of COCO's `images` array.
struct CocoImage {
  uint64_t id = 0;
  uint32_t width = 0, height = 0;  // pixels
  std::string file_name;           // "" when the record has none
};

/// One entry of COCO's `annotations` array.
struct CocoCaption {
  uint32_t image = 0;  // index into CocoCaptions::images (not the COCO id)
  std::string text;
};

/// A COCO captions file: images and captions, each in file order.
struct CocoCaptions {
  std::vector<CocoImage> images;
  std::vector<CocoCaption> captions;

  /// Every caption's text, in file order.
  std::vector<std::string> CaptionTexts() const;
  /// For each image, the index into `captions` of its first caption in file order, or
  /// kNoCaption if it has none.
  std::vector<size_t> FirstCaptionOfEachImage() const;
  static constexpr size_t kNoCaption = static_cast<size_t>(-1);
};

/// Read a COCO captions file (`images[]` with id/width/height and optional file_name,
/// `annotations[]` with image_id/caption). Errors: NotFound if the file is absent; Corrupt
/// naming the file and the image or annotation at fault (malformed JSON, no images, a missing
/// or mistyped field, a size of 0 or over 2^32-1, an image_id no image has, a repeated image id).
Result<CocoCaptions> ReadCocoCaptions(const std::string& path);

/// One entry of an mmc4 document's `image_info`: the image sits before sentence
/// `matched_text_index` (< the document's sentence count).
struct Mmc4Image {
  uint32_t matched_text_index = 0;
};

/// One mmc4 document (one JSONL line).
struct Mmc4Document {
  uint64_t line = 0;                   // 1-based line number in the file
  std::vector<std::string> sentences;  // `text_list`
  std::vector<Mmc4Image> images;       // `image_info`, in file order

  /// The sentences joined by `separator`.
  std::string JoinedText(std::string_view separator = " ") const;
};

/// Read every document of an mmc4 JSONL file, in file order (blank lines skipped). Errors:
/// NotFound; Corrupt naming the file and line (malformed JSON, no string `text_list`, no
/// `image_info` array, a `matched_text_index` that is not an index of `text_list`).
Result<std::vector<Mmc4Document>> ReadMmc4Documents(const std::string& path);

/// mmc4 records carry no image sizes, so image `image` of mmc4 document `doc` (0-based, file
/// order) takes the real size of a COCO val2017 image: the one at this index of the COCO file's
/// `images` (of `num_coco_images` ≥ 1): Mix64(seed ^ Mix64(doc × 1000003 + image)) mod
/// num_coco_images. The planner's built-in corpora and `mmpt synth --profile mmc4` use it; the
/// same rule is in bench/vision_dp_bench.py.
uint64_t Mmc4CocoImage(uint64_t seed, uint64_t doc, uint64_t image, uint64_t num_coco_images);

}  // namespace mmpt::corpora
