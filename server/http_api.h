// The HTTP/JSON API (cpp-httplib) over a ControlPlane: versioned routes under /api/v1, bearer
// tokens, request size caps, and errors as {"error": {"code", "message", "field"}} with the
// HTTP status that matches the util::StatusCode. See docs/api.md.
#pragma once

#include <memory>
#include <string>

#include "server/control_plane.h"

namespace httplib {
class Server;
}

namespace trainyard::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8765;            // 0 = any free port (see bound_port())
  bool require_auth = false;  // forced on when host is not a loopback address
  int64_t max_request_bytes = int64_t{1} << 20;
};

class HttpApi {
 public:
  HttpApi(ControlPlane& plane, HttpOptions options);
  ~HttpApi();
  // Binds the socket; Unavailable with the reason when the address is taken.
  util::Status bind();
  int bound_port() const { return port_; }
  // Serves until stop() is called from another thread (or a signal handler thread).
  void serve();
  void stop();

 private:
  void routes();
  ControlPlane& plane_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
};

bool is_loopback_host(const std::string& host);
int http_status(util::StatusCode code);
// The spec field an error message is about ("job.yaml:14: spec.workers must ..."), or "".
std::string error_field(const std::string& message);

}  // namespace trainyard::server
