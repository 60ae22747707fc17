#include "mmpt/pack/overlong.h"

namespace mmpt::pack {

std::string_view OverlongPolicyName(OverlongPolicy policy) {
  return policy == OverlongPolicy::kTruncate ? "truncate" : "drop";
}

Result<OverlongPolicy> ParseOverlongPolicy(std::string_view name) {
  if (name == "truncate") return OverlongPolicy::kTruncate;
  if (name == "drop") return OverlongPolicy::kDrop;
  return Status::InvalidArgument("unknown over-long policy '{}' (expected truncate or drop)", name);
}

}  // namespace mmpt::pack
