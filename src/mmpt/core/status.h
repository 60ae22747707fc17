#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace mmpt {

/// The small set of error kinds every mmpt function reports.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kIOError,
  kCorrupt,
  kOutOfRange,
  kCancelled,
  kInternal,
  kTimeout,  // a peer did not answer in time
};

/// Name a status code the way messages print it ("InvalidArgument", ...).
std::string_view StatusCodeName(StatusCode code);

/// Carry success, or an error code with a message naming the file, line or sample at fault.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  template <typename... Args>
  static Status InvalidArgument(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status NotFound(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kNotFound, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status IOError(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kIOError, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status Corrupt(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kCorrupt, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status OutOfRange(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kOutOfRange, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status Cancelled(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kCancelled, fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status Internal(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kInternal, fmt::format(f, std::forward<Args>(args)...));
  }

  template <typename... Args>
  static Status Timeout(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kTimeout, fmt::format(f, std::forward<Args>(args)...));
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  /// Render as "Code: message", or "OK".
  std::string ToString() const;
  /// Return a copy whose message is prefixed with `context` (e.g. a file name).
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

/// Hold either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(data_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  Status status() const { return ok() ? Status::OK() : std::get<Status>(data_); }
  T& operator*() & { return std::get<T>(data_); }
  const T& operator*() const& { return std::get<T>(data_); }
  T&& operator*() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &std::get<T>(data_); }
  const T* operator->() const { return &std::get<T>(data_); }
  /// Move the value out; the Result must be ok().
  T ValueOrDie() && {
    if (!ok()) {
      fmt::print(stderr, "mmpt: fatal: {}\n", status().ToString());
      std::abort();
    }
    return std::get<T>(std::move(data_));
  }

 private:
  std::variant<T, Status> data_;
};

/// What a stage does with one bad input record or sample (prepare's records, the loader's
/// samples): stop with its error naming it, or skip it, counted and named. Spelled
/// on_error="fail" | "skip" (--on-error) everywhere.
enum class ErrorPolicy : uint8_t { kFail, kSkip };
/// "fail" or "skip": what ParseErrorPolicy reads back.
std::string_view ErrorPolicyName(ErrorPolicy policy);
/// Parse "fail" or "skip". Errors: InvalidArgument naming the value.
Result<ErrorPolicy> ParseErrorPolicy(std::string_view name);

}  // namespace mmpt

#define MMPT_CONCAT_INNER(a, b) a##b
#define MMPT_CONCAT(a, b) MMPT_CONCAT_INNER(a, b)

/// Return the Status of `expr` from the enclosing function if it is not OK.
#define MMPT_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::mmpt::Status _mmpt_status = (expr);        \
    if (!_mmpt_status.ok()) return _mmpt_status; \
  } while (0)

#define MMPT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(*tmp)

/// Evaluate a Result<T> expression; on error return its Status, else assign the value to `lhs`.
#define MMPT_ASSIGN_OR_RETURN(lhs, expr) \
  MMPT_ASSIGN_OR_RETURN_IMPL(MMPT_CONCAT(_mmpt_result_, __LINE__), lhs, expr)

/// Abort with a message on a programmer error (never for bad input).
#define MMPT_CHECK(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fmt::print(stderr, "mmpt: check failed at {}:{}: {}\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)
