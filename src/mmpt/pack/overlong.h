#pragma once

#include <cstdint>
#include <string_view>

#include "mmpt/core/status.h"

namespace mmpt::pack {

/// What happens to a sample longer than the sequence length. Either way it is counted.
enum class OverlongPolicy : uint8_t {
  kTruncate,  // cut text tokens from the end, keep every image; drop if images alone overflow
  kDrop,      // drop the sample
};

std::string_view OverlongPolicyName(OverlongPolicy policy);
/// Parse "truncate" or "drop". Errors: InvalidArgument naming the bad value.
Result<OverlongPolicy> ParseOverlongPolicy(std::string_view name);

/// A sample after the over-long policy.
struct Fitted {
  bool dropped = false;      // the sample does not enter any pack
  bool truncated = false;    // text was cut
  uint32_t tokens = 0;       // text + image tokens kept (0 when dropped)
  uint32_t text_tokens = 0;  // text tokens kept
};

/// Fit a sample of `text_tokens` text and `image_tokens` image-placeholder tokens into
/// `seq_len` under `policy`. Images are never split: when their tokens alone fill seq_len and
/// text remains, or exceed it, the sample is dropped under either policy.
inline Fitted FitToLength(uint32_t text_tokens, uint32_t image_tokens, uint32_t seq_len,
                          OverlongPolicy policy) {
  Fitted out;
  uint64_t total = uint64_t{text_tokens} + image_tokens;
  if (total <= seq_len) {
    out.tokens = static_cast<uint32_t>(total);
    out.text_tokens = text_tokens;
    return out;
  }
  if (policy == OverlongPolicy::kDrop || image_tokens >= seq_len) {
    out.dropped = true;
    return out;
  }
  out.truncated = true;
  out.text_tokens = seq_len - image_tokens;
  out.tokens = seq_len;
  return out;
}

}  // namespace mmpt::pack
