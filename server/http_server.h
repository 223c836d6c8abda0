// A small HTTP/1.1 server over GNU libmicrohttpd for the API: a request and a response as plain
// values, a router matching method + path regex, and a server that bounds what a client can make
// it hold (threads, connections, header memory, body bytes, idle time).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"
#include "util/thread_annotations.h"

struct MHD_Daemon;

namespace trainyard::server::http {

class HandlerPool;

struct Request {
  std::string method;                // as sent ("GET", "POST", ...)
  std::string path;                  // without the query string, percent-decoded
  std::vector<std::string> matches;  // [0] the path, [1..] regex groups
  std::vector<std::pair<std::string, std::string>> params;   // query parameters, decoded, in order
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased, in order
  std::string body;                                          // raw bytes whatever the Content-Type
  // The client's socket, valid while the request is handled (for the peer's uid, looked up only
  // when a request asks to be anonymous).
  int connection_fd = -1;

  bool has_param(std::string_view name) const;
  // The first value of a query parameter, "" when absent.
  std::string param(std::string_view name) const;
  // The first header of that name (any case); nullptr when the request has none.
  const std::string* header(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;

  void set_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
};

using Handler = std::function<void(const Request&, Response&)>;

// Routes by exact method and a regex over the whole path; the first route added wins.
class Router {
 public:
  void add(std::string method, const std::string& path_pattern, Handler handler);
  // The handler for `req` (filling req.matches), or nullptr when no route matches. HEAD is
  // routed like GET (libmicrohttpd leaves the body out of the reply).
  const Handler* find(Request& req) const;

 private:
  struct Route {
    std::string method;
    std::regex pattern;
    Handler handler;
  };
  std::vector<Route> routes_;
};

struct ServerLimits {
  // Threads that run handlers. Handlers may block briefly (a group commit's fsync), so several
  // run at once; they never run on the threads that read and write sockets.
  unsigned threads = 8;
  // Threads that read requests and write replies (epoll); a connection that is still sending
  // its request costs them nothing but a socket in their epoll set.
  unsigned io_threads = 4;
  // A connection with no traffic for this long is closed, whatever state it is in.
  unsigned idle_timeout_seconds = 30;
  // Open connections at once; more are not served until one closes.
  unsigned max_connections = 1024;
  // Per connection, for the request line, headers and reply headers: more gets a 431.
  size_t connection_memory_bytes = 64 * 1024;
  // Connections the kernel queues before they are accepted.
  int listen_backlog = 1024;
  // A body over this is refused with 413. It is read and dropped up to `drain_body_bytes` so
  // that a client which sends its whole body before reading (most do) sees the 413; beyond
  // that the connection is closed.
  int64_t max_body_bytes = int64_t{1} << 20;
  int64_t drain_body_bytes = int64_t{64} << 20;
};

struct ServerCallbacks {
  // Answers one complete request, on one of the handler threads, several at once.
  std::function<void(Request&, Response&)> handle;
  // The reply the server itself gives: 413 for a body over the limit, 500 when `handle` threw.
  std::function<Response(int http_status, const util::Status& why)> error;
  // Called after every reply is queued (metrics).
  std::function<void(const Request&, int http_status, double seconds)> observe;
};

class Server {
 public:
  Server(ServerLimits limits, ServerCallbacks callbacks);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port (port 0: any free port), listens and starts answering on the thread pool.
  // Unavailable with the reason when the address is taken or not available.
  util::Status start(const std::string& host, int port);
  int port() const { return port_; }
  // Blocks until stop(), then lets running and queued handlers finish and closes every
  // connection.
  void wait_and_shut_down() TY_EXCLUDES(mu_);
  // Safe from any thread, a handler's and a signal thread's included; never blocks.
  void stop() TY_EXCLUDES(mu_);

 private:
  // libmicrohttpd calls plain functions; they live in http_server.cc.
  friend struct MhdCallbacks;
  struct Exchange;
  // Runs `handle` for a complete request on a handler thread (inline once shutting down), then
  // lets the connection's I/O thread send the reply.
  void dispatch(void* connection, Exchange& ex);
  Response respond(Exchange& ex) noexcept;
  Response error_reply(int status, const util::Status& why) noexcept;
  // Hands `res` to libmicrohttpd on the connection's I/O thread; false when it refused.
  bool queue(void* connection, Exchange& ex, Response& res);

  ServerLimits limits_;
  ServerCallbacks callbacks_;
  std::unique_ptr<HandlerPool> pool_;
  MHD_Daemon* daemon_ = nullptr;
  int listen_fd_ = -1;
  int port_ = 0;
  util::Mutex mu_;
  std::condition_variable stopped_cv_;  // with mu_: stopped_ became true
  bool stopped_ TY_GUARDED_BY(mu_) = false;
};

}  // namespace trainyard::server::http
