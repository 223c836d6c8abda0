#include "server/http_api.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/job_manifest.h"
#include "server/metrics.h"

namespace trainyard::server {

// The field a spec error is about: "job.yaml:14: spec.workers must ..." -> "spec.workers".
// The parser's message forms live with the parser (model/job_manifest_error_field.cc).
std::string error_field(const std::string& message) {
  return model::job_spec_error_field(message);
}

int http_status(util::StatusCode code) {
  switch (code) {
    case util::StatusCode::Ok:
      return 200;
    case util::StatusCode::InvalidArgument:
      return 400;
    case util::StatusCode::OutOfRange:
      return 400;
    case util::StatusCode::NotFound:
      return 404;
    case util::StatusCode::AlreadyExists:
      return 409;
    case util::StatusCode::FailedPrecondition:
      return 409;
    case util::StatusCode::Aborted:
      return 409;
    case util::StatusCode::PermissionDenied:
      return 403;
    case util::StatusCode::Unauthenticated:
      return 401;
    case util::StatusCode::ResourceExhausted:
      return 429;
    case util::StatusCode::Unavailable:
      return 503;
    case util::StatusCode::Internal:
      return 500;
  }
  return 500;
}

bool is_loopback_host(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

http::Response error_response(const util::Status& st, std::string field) {
  nlohmann::json err = {{"code", util::status_code_name(st.code())}, {"message", st.message()}};
  if (field.empty()) field = error_field(st.message());
  err["field"] = field.empty() ? nlohmann::json(nullptr) : nlohmann::json(field);
  return http::Response{.status = http_status(st.code()),
                        // Messages may quote request bytes that are not UTF-8: replace them.
                        .body = nlohmann::json{{"error", err}}.dump(
                            -1, ' ', false, nlohmann::json::error_handler_t::replace),
                        .content_type = "application/json",
                        .headers = {}};
}

HttpApi::HttpApi(ControlPlane& plane, HttpOptions options)
    : plane_(plane), options_(std::move(options)) {
  if (!is_loopback_host(options_.host)) options_.require_auth = true;
  routes();
  http::ServerLimits limits{.threads = options_.threads,
                            .idle_timeout_seconds = options_.idle_timeout_seconds,
                            .max_connections = options_.max_connections,
                            .max_body_bytes = options_.max_request_bytes};
  http::ServerCallbacks callbacks{
      .handle = [this](http::Request& req, http::Response& res) { dispatch(req, res); },
      // The server sets the status it refuses with (413, 500) on the reply.
      .error = [](int, const util::Status& why) { return error_response(why); },
      .observe =
          [this](const http::Request& req, int status, double seconds) {
            plane_.metrics().observe_request(req.method, route_of(req.path), status, seconds);
          }};
  http_ = std::make_unique<http::Server>(limits, std::move(callbacks));
}

HttpApi::~HttpApi() = default;

void HttpApi::dispatch(http::Request& req, http::Response& res) const {
  if (const http::Handler* handler = router_.find(req)) return (*handler)(req, res);
  res = error_response(
      util::not_found(fmt::format("no route {} {}; see docs/api.md", req.method, req.path)));
}

util::Status HttpApi::bind() {
  return http_->start(options_.host, options_.port);
}

void HttpApi::serve() {
  http_->wait_and_shut_down();
}
void HttpApi::stop() {
  http_->stop();
}

}  // namespace trainyard::server
