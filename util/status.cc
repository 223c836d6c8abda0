#include "util/status.h"

#include <cstdio>
#include <cstdlib>

namespace trainyard::util {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::Ok:
      return "OK";
    case StatusCode::InvalidArgument:
      return "InvalidArgument";
    case StatusCode::NotFound:
      return "NotFound";
    case StatusCode::AlreadyExists:
      return "AlreadyExists";
    case StatusCode::FailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::OutOfRange:
      return "OutOfRange";
    case StatusCode::PermissionDenied:
      return "PermissionDenied";
    case StatusCode::Unauthenticated:
      return "Unauthenticated";
    case StatusCode::ResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::Aborted:
      return "Aborted";
    case StatusCode::Unavailable:
      return "Unavailable";
    case StatusCode::Internal:
      return "Internal";
  }
  return "Unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

Status Status::with_context(std::string_view prefix) const {
  if (is_ok()) return *this;
  return Status(code_, std::string(prefix) + ": " + message_);
}

Status invalid_argument(std::string message) {
  return {StatusCode::InvalidArgument, std::move(message)};
}
Status not_found(std::string message) {
  return {StatusCode::NotFound, std::move(message)};
}
Status failed_precondition(std::string message) {
  return {StatusCode::FailedPrecondition, std::move(message)};
}
Status out_of_range(std::string message) {
  return {StatusCode::OutOfRange, std::move(message)};
}
Status internal_error(std::string message) {
  return {StatusCode::Internal, std::move(message)};
}
Status unavailable(std::string message) {
  return {StatusCode::Unavailable, std::move(message)};
}

void check_failed(const char* file, int line, const char* expr, std::string_view msg) {
  std::fprintf(stderr, "%s:%d: invariant violated: %s %.*s\n", file, line, expr,
               static_cast<int>(msg.size()), msg.data());
  std::abort();
}

}  // namespace trainyard::util
