// The HTTP/JSON API (libmicrohttpd, through server/http_server.h) over a ControlPlane: versioned
// routes under /api/v1, bearer tokens, request size caps, and errors as {"error": {"code",
// "message", "field"}} with the HTTP status that matches the util::StatusCode. See docs/api.md.
#pragma once

#include <memory>
#include <string>

#include "server/control_plane.h"
#include "server/http_server.h"

namespace trainyard::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8765;            // 0 = any free port (see bound_port())
  bool require_auth = false;  // forced on when host is not a loopback address
  int64_t max_request_bytes = int64_t{1} << 20;
  // Bounds on what clients can make the server hold; see http::ServerLimits.
  unsigned threads = 8;
  unsigned idle_timeout_seconds = 30;
  unsigned max_connections = 1024;
};

class HttpApi {
 public:
  HttpApi(ControlPlane& plane, HttpOptions options);
  ~HttpApi();
  // Binds the socket and starts answering on the server's threads; Unavailable with the reason
  // when the address is taken or not available.
  util::Status bind();
  int bound_port() const { return http_->port(); }
  // Blocks until stop(), then closes the connections once running requests are answered.
  void serve();
  // Safe from any thread, also before serve() and from a handler.
  void stop();

 private:
  void routes();
  void dispatch(http::Request& req, http::Response& res) const;
  ControlPlane& plane_;
  HttpOptions options_;
  http::Router router_;
  std::unique_ptr<http::Server> http_;
};

// The JSON error reply for `st` ({"error": {"code", "message", "field"}}); `field` defaults to
// the one error_field() finds in the message.
http::Response error_response(const util::Status& st, std::string field = "");

bool is_loopback_host(const std::string& host);
int http_status(util::StatusCode code);
// The spec field an error message is about ("job.yaml:14: spec.workers must ..."), or "".
std::string error_field(const std::string& message);

}  // namespace trainyard::server
