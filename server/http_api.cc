#include "server/http_api.h"

#include <charconv>

#include <fmt/format.h>
#include <httplib.h>

#include "model/job_state.h"

namespace trainyard::server {
namespace {
thread_local util::Duration request_started{0};
}  // namespace

// The field a spec error is about: "job.yaml:14: spec.workers must ..." -> "spec.workers".
std::string error_field(const std::string& message) {
  size_t start = 0;
  for (int colons = 0; colons < 2; ++colons) {
    const size_t c = message.find(": ", start);
    if (c == std::string::npos) break;
    const std::string head = message.substr(start, c - start);
    const bool located = colons == 0 && head.find(':') != std::string::npos;
    const bool one_word = head.find(' ') == std::string::npos;
    if (!located && one_word &&
        (head.rfind("spec", 0) == 0 || head.rfind("metadata", 0) == 0 || head == "apiVersion" ||
         head == "kind"))
      return head;
    start = c + 2;
  }
  const size_t sp = message.find(' ', start);
  const std::string word = message.substr(start, sp == std::string::npos ? sp : sp - start);
  if (word.rfind("spec.", 0) == 0 || word.rfind("metadata.", 0) == 0 || word == "apiVersion" ||
      word == "kind")
    return word;
  return "";
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

HttpApi::HttpApi(ControlPlane& plane, HttpOptions options)
    : plane_(plane), options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  if (!is_loopback_host(options_.host)) options_.require_auth = true;
  http_->set_payload_max_length(static_cast<size_t>(options_.max_request_bytes));
  // Headers and body go out as separate writes; without TCP_NODELAY the body waits ~40 ms for
  // the client's delayed ACK (bench/server_bench measures the difference).
  http_->set_tcp_nodelay(true);
  // cpp-httplib takes ownership of the pool it is handed (its API wants a raw pointer).
  http_->new_task_queue = [] { return new httplib::ThreadPool(8); };
  // A request is routed and logged on one pool thread, so its start time can live there.
  http_->set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    request_started = util::WallClock::steady_now();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    plane_.metrics().observe_request(
        req.method, route_of(req.path), res.status,
        util::to_seconds(util::WallClock::steady_now() - request_started));
  });
  routes();
}

HttpApi::~HttpApi() = default;

util::Status HttpApi::bind() {
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
  } else {
    port_ = http_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0)
    return util::unavailable(fmt::format(
        "cannot listen on {}:{} (address in use or not available); pick another with --listen",
        options_.host, options_.port));
  return util::Status::ok();
}

void HttpApi::serve() {
  http_->listen_after_bind();
}
void HttpApi::stop() {
  http_->stop();
}

}  // namespace trainyard::server
