#include "mmpt/core/status.h"

namespace mmpt {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kIOError: return "IOError";
    case StatusCode::kCorrupt: return "Corrupt";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kTimeout: return "Timeout";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return fmt::format("{}: {}", StatusCodeName(code_), message_);
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, fmt::format("{}: {}", context, message_));
}

std::string_view ErrorPolicyName(ErrorPolicy policy) {
  return policy == ErrorPolicy::kFail ? "fail" : "skip";
}

Result<ErrorPolicy> ParseErrorPolicy(std::string_view name) {
  if (name == "fail") return ErrorPolicy::kFail;
  if (name == "skip") return ErrorPolicy::kSkip;
  return Status::InvalidArgument("on_error must be fail or skip, not '{}'", name);
}

}  // namespace mmpt
