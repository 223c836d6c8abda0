// Status and Result<T>: errors a user can cause are values, not exceptions.
// Codes follow Abseil's canonical set so the server can map them to HTTP statuses.
// Propagate with TY_RETURN_IF_ERROR / TY_ASSIGN_OR_RETURN; TY_CHECK guards invariants only.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace trainyard::util {

enum class StatusCode {
  Ok,
  InvalidArgument,
  NotFound,
  AlreadyExists,
  FailedPrecondition,
  OutOfRange,
  PermissionDenied,
  Unauthenticated,
  ResourceExhausted,
  Aborted,
  Unavailable,
  Internal,
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == StatusCode::Ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: <message>", or "OK".
  std::string to_string() const;
  // Returns a copy whose message is "<prefix>: <message>" (adds context on the way up).
  Status with_context(std::string_view prefix) const;

 private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

Status invalid_argument(std::string message);
Status not_found(std::string message);
Status failed_precondition(std::string message);
Status out_of_range(std::string message);
Status internal_error(std::string message);
Status unavailable(std::string message);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {}  // NOLINT: implicit by design

  bool is_ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(data_);
  }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

[[noreturn]] void check_failed(const char* file, int line, const char* expr, std::string_view msg);

}  // namespace trainyard::util

#define TY_CONCAT_INNER(a, b) a##b
#define TY_CONCAT(a, b) TY_CONCAT_INNER(a, b)

#define TY_RETURN_IF_ERROR(expr)                   \
  do {                                             \
    ::trainyard::util::Status ty_status_ = (expr); \
    if (!ty_status_.is_ok()) return ty_status_;    \
  } while (0)

#define TY_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.is_ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define TY_ASSIGN_OR_RETURN(lhs, expr) \
  TY_ASSIGN_OR_RETURN_IMPL(TY_CONCAT(ty_result_, __LINE__), lhs, expr)

// Invariant checks: never triggered by user input. TY_CHECK is always on; TY_DCHECK in debug.
#define TY_CHECK(cond)                                                           \
  do {                                                                           \
    if (!(cond)) ::trainyard::util::check_failed(__FILE__, __LINE__, #cond, ""); \
  } while (0)
#define TY_CHECK_MSG(cond, msg)                                                   \
  do {                                                                            \
    if (!(cond)) ::trainyard::util::check_failed(__FILE__, __LINE__, #cond, msg); \
  } while (0)
#ifdef NDEBUG
#define TY_DCHECK(cond) \
  do {                  \
  } while (0)
#else
#define TY_DCHECK(cond) TY_CHECK(cond)
#endif
