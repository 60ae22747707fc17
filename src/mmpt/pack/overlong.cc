#include "mmpt/pack/overlong.h"

namespace mmpt::pack {

std::string_view OverlongPolicyName(OverlongPolicy policy) {
  return policy == OverlongPolicy::kTruncate ? "truncate" : "drop";
}

Result<OverlongPolicy> ParseOverlongPolicy(std::string_view name) {
  if (name == "truncate") return OverlongPolicy::kTruncate;
  if (name == "drop") return OverlongPolicy::kDrop;
  return Status::InvalidArgument("unknown over-long policy '{}' (expected truncate or drop)",
                                 name);
}

Fitted FitToLength(uint32_t text_tokens, uint32_t image_tokens, uint32_t seq_len,
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
