#include "server/http_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "util/clock.h"
#include "util/log.h"
#include "util/thread_annotations.h"

// Why libmicrohttpd, in epoll mode: a connection that has not finished sending its request line
// and headers is only an entry in an epoll set and holds no thread, so slow or stalled clients
// (slowloris) cannot take the threads that answer everyone else, as they did with a
// thread-per-connection pool. Each connection gets a fixed memory pool for its request line and
// headers (connection_memory_bytes), so a flood of headers is refused with 431 instead of growing
// the heap; idle connections time out, and the number of connections is capped.
//
// Handlers run on a separate pool: a complete request suspends its connection, a handler thread
// answers it and resumes the connection, and the I/O thread sends the reply. So a handler that
// waits for a group commit's fsync delays no other connection, and up to `threads` handlers run
// at once however the I/O threads happened to accept the connections.

namespace trainyard::server::http {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

MHD_Result add_header(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto& req = *static_cast<Request*>(cls);
  req.headers.emplace_back(lowercase(key != nullptr ? key : ""), value != nullptr ? value : "");
  return MHD_YES;
}

MHD_Result add_param(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto& req = *static_cast<Request*>(cls);
  req.params.emplace_back(key != nullptr ? key : "", value != nullptr ? value : "");
  return MHD_YES;
}

util::Status body_too_large(int64_t limit) {
  return util::Status(
      util::StatusCode::ResourceExhausted,
      fmt::format("the request body is larger than this server's limit of {} bytes; raise "
                  "maxRequestBytes in the server config to accept larger ones",
                  limit));
}

// Every connection needs a descriptor: make sure the soft limit lets max_connections be reached
// (Debian's default soft limit is 1024, the hard one much higher).
void raise_descriptor_limit(unsigned connections) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  const rlim_t wanted = static_cast<rlim_t>(connections) + 256;
  if (lim.rlim_cur >= wanted) return;
  lim.rlim_cur = lim.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, lim.rlim_max);
  setrlimit(RLIMIT_NOFILE, &lim);
}

util::Status listen_failed(const std::string& host, int port, const std::string& why) {
  return util::unavailable(fmt::format(
      "cannot listen on {}:{}: {}; pick another address or port with --listen", host, port, why));
}

// A listening socket on the first of host:port's addresses that takes one.
util::Result<int> listen_socket(const std::string& host, int port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return listen_failed(host, port, fmt::format("cannot resolve the host ({})", gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, &freeaddrinfo);
  int error = 0;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    // Non-blocking: every I/O thread waits on this socket and only one wins each accept().
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = errno;
      continue;
    }
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // restart despite TIME_WAIT
    // The backlog is ours since the socket is (MHD_OPTION_LISTEN_BACKLOG_SIZE only applies to
    // sockets libmicrohttpd opens): bursts of connections wait instead of being reset.
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) return fd;
    error = errno;
    ::close(fd);
  }
  return listen_failed(host, port, std::strerror(error));
}

// The port `fd` listens on (the one picked for port 0).
util::Result<int> bound_port(int fd, const std::string& host, int port) {
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0)
    return listen_failed(host, port, std::strerror(errno));
  return bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

// Blocks every asynchronous signal in the calling thread for its lifetime.
class BlockSignals {
 public:
  BlockSignals() {
    sigset_t all;
    sigfillset(&all);
    // Signals a fault raises must stay deliverable.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) sigdelset(&all, sig);
    pthread_sigmask(SIG_BLOCK, &all, &previous_);
  }
  ~BlockSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  BlockSignals(const BlockSignals&) = delete;
  BlockSignals& operator=(const BlockSignals&) = delete;

 private:
  sigset_t previous_{};
};

}  // namespace

struct Server::Exchange {
  Request req;
  util::Duration started{0};
  int64_t body_bytes = 0;  // received so far, kept or not
  bool too_large = false;
  bool dispatched = false;            // handed to a handler thread (the connection is suspended)
  std::atomic<bool> answered{false};  // `reply` is ready; set before the connection is resumed
  Response reply;
  bool replied = false;  // queued with libmicrohttpd
};

// A fixed set of threads running tasks in order of submission.
class HandlerPool {
 public:
  explicit HandlerPool(unsigned threads) {
    for (unsigned i = 0; i < std::max(threads, 1u); ++i) workers_.emplace_back([this] { run(); });
  }
  ~HandlerPool() { close(); }

  // False once close() began: the caller runs the task itself.
  bool submit(std::function<void()> task) TY_EXCLUDES(mu_) {
    {
      util::MutexLock lock(mu_);
      if (closed_) return false;
      tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
    return true;
  }

  // Refuses new tasks, runs those already queued, and joins the threads.
  void close() TY_EXCLUDES(mu_) {
    {
      util::MutexLock lock(mu_);
      closed_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : workers_)
      if (t.joinable()) t.join();
  }

 private:
  void run() TY_EXCLUDES(mu_) {
    for (;;) {
      std::function<void()> task;
      {
        util::UniqueLock lock(mu_);
        while (!closed_ && tasks_.empty()) lock.wait(ready_);
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  util::Mutex mu_;
  std::condition_variable ready_;  // with mu_: a task was queued, or closed_ became true
  std::deque<std::function<void()>> tasks_ TY_GUARDED_BY(mu_);
  bool closed_ TY_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;  // started by the constructor, joined by close()
};

// The plain functions libmicrohttpd calls. None lets an exception out: it would unwind through C.
struct MhdCallbacks {
  static MHD_Result on_request(void* cls, MHD_Connection* connection, const char* url,
                               const char* method, const char* /*version*/, const char* upload_data,
                               size_t* upload_data_size, void** request_state) {
    auto& server = *static_cast<Server*>(cls);
    auto* ex = static_cast<Server::Exchange*>(*request_state);
    try {
      if (ex == nullptr) {  // the headers are in; the body (if any) comes in later calls
        ex = new_exchange(connection, url, method).release();
        *request_state = ex;  // freed by on_completed
        return refuse_declared_body_over_limit(server, connection, *ex);
      }
      if (*upload_data_size > 0)
        return receive_body(server.limits_, *ex, upload_data, upload_data_size);
      return answer(server, connection, *ex);
    } catch (...) {
      // Out of memory while copying the request, say: closing the connection is what is left.
      return MHD_NO;
    }
  }

  // A request whose line and headers are in.
  static std::unique_ptr<Server::Exchange> new_exchange(MHD_Connection* connection, const char* url,
                                                        const char* method) {
    auto fresh = std::make_unique<Server::Exchange>();
    fresh->started = util::WallClock::steady_now();
    fresh->req.method = method;
    fresh->req.path = url;
    MHD_get_connection_values(connection, MHD_HEADER_KIND, &add_header, &fresh->req);
    MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &add_param, &fresh->req);
    if (const auto* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD))
      fresh->req.connection_fd = info->connect_fd;
    return fresh;
  }

  // A declared length over the cap is refused before the body is read when the client waits
  // for "100 Continue" (curl does for large bodies) or the body is too large to drain; refusing
  // closes the connection after the reply.
  static MHD_Result refuse_declared_body_over_limit(Server& server, MHD_Connection* connection,
                                                    Server::Exchange& ex) {
    const ServerLimits& limits = server.limits_;
    const std::string* length = ex.req.header("content-length");
    if (length == nullptr) return MHD_YES;
    int64_t declared = 0;
    const auto [end, ec] =
        std::from_chars(length->data(), length->data() + length->size(), declared);
    const std::string* expect = ex.req.header("expect");
    const bool waits = expect != nullptr && iequals(*expect, "100-continue");
    if (ec == std::errc() && declared > limits.max_body_bytes &&
        (waits || declared > limits.drain_body_bytes)) {
      ex.too_large = true;
      Response res = server.error_reply(413, body_too_large(limits.max_body_bytes));
      return server.queue(connection, ex, res) ? MHD_YES : MHD_NO;
    }
    return MHD_YES;
  }

  // A piece of the body: kept up to the cap, dropped beyond it.
  static MHD_Result receive_body(const ServerLimits& limits, Server::Exchange& ex,
                                 const char* upload_data, size_t* upload_data_size) {
    const size_t n = *upload_data_size;
    *upload_data_size = 0;
    ex.body_bytes += static_cast<int64_t>(n);
    if (!ex.too_large && ex.body_bytes <= limits.max_body_bytes) {
      ex.req.body.append(upload_data, n);
    } else if (!ex.too_large) {
      ex.too_large = true;
      std::string().swap(ex.req.body);
    }
    // Past the drain limit the only answer left is to close the connection.
    return ex.body_bytes > limits.drain_body_bytes ? MHD_NO : MHD_YES;
  }

  // The request is complete: hand it to a handler, or send the reply it made or a 413.
  static MHD_Result answer(Server& server, MHD_Connection* connection, Server::Exchange& ex) {
    if (ex.replied) return MHD_YES;
    if (ex.dispatched) {  // resumed: the handler's reply is ready
      if (!ex.answered.load(std::memory_order_acquire)) return MHD_YES;
      return server.queue(connection, ex, ex.reply) ? MHD_YES : MHD_NO;
    }
    if (ex.too_large) {
      Response res = server.error_reply(413, body_too_large(server.limits_.max_body_bytes));
      return server.queue(connection, ex, res) ? MHD_YES : MHD_NO;
    }
    server.dispatch(connection, ex);
    return MHD_YES;
  }

  // No TCP_NODELAY to set: libmicrohttpd manages TCP_NODELAY and TCP_CORK around each send and
  // pushes the last piece of every reply (headers and an in-memory body go out in one writev),
  // so no reply waits ~40 ms for the client's delayed ACK (bench/server_bench measures it).
  static MHD_Daemon* start_daemon(Server& server) {
    const ServerLimits& limits = server.limits_;
    return MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, nullptr,
        nullptr, &MhdCallbacks::on_request, &server,
        // First, so that the library's warnings about the options below reach the log too.
        MHD_OPTION_EXTERNAL_LOGGER, &MhdCallbacks::on_log, &server,  //
        MHD_OPTION_LISTEN_SOCKET, server.listen_fd_,
        // With one thread the polling thread does the I/O; the library wants 0 for that, not 1.
        MHD_OPTION_THREAD_POOL_SIZE, limits.io_threads > 1 ? limits.io_threads : 0u,
        MHD_OPTION_CONNECTION_TIMEOUT, limits.idle_timeout_seconds,  //
        MHD_OPTION_CONNECTION_LIMIT, limits.max_connections,         //
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, limits.connection_memory_bytes,
        MHD_OPTION_NOTIFY_COMPLETED, &MhdCallbacks::on_completed, &server, MHD_OPTION_END);
  }

  static void on_completed(void* /*cls*/, MHD_Connection* /*connection*/, void** request_state,
                           MHD_RequestTerminationCode /*why*/) {
    delete static_cast<Server::Exchange*>(*request_state);
    *request_state = nullptr;
  }

  static void on_log(void* /*cls*/, const char* format, va_list args) {
    char line[512];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    std::vsnprintf(line, sizeof line, format, args);
#pragma GCC diagnostic pop
    std::string_view text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    // Debug only: a client can make the library log per connection (timeouts, bad requests).
    TY_LOG_DEBUG("http: {}", text);
  }

  static void free_body(void* body) {
    delete static_cast<std::string*>(body);
  }
};

bool Request::has_param(std::string_view name) const {
  return std::any_of(params.begin(), params.end(), [&](const auto& p) { return p.first == name; });
}

std::string Request::param(std::string_view name) const {
  for (const auto& [key, value] : params)
    if (key == name) return value;
  return "";
}

const std::string* Request::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (iequals(key, name)) return &value;
  return nullptr;
}

void Router::add(std::string method, const std::string& path_pattern, Handler handler) {
  routes_.push_back({std::move(method), std::regex(path_pattern), std::move(handler)});
}

const Handler* Router::find(Request& req) const {
  // Both arms string_view: with "GET" against a std::string the ternary would make a temporary
  // string, and the view would outlive it.
  const std::string_view method =
      req.method == "HEAD" ? std::string_view("GET") : std::string_view(req.method);
  for (const Route& r : routes_) {
    if (r.method != method) continue;
    std::smatch m;
    if (!std::regex_match(req.path, m, r.pattern)) continue;
    req.matches.assign(m.begin(), m.end());
    return &r.handler;
  }
  return nullptr;
}

Server::Server(ServerLimits limits, ServerCallbacks callbacks)
    : limits_(limits), callbacks_(std::move(callbacks)) {}

Server::~Server() {
  // Handlers first: each resumes its connection, which must happen before the daemon stops.
  if (pool_) pool_->close();
  if (daemon_ != nullptr) {
    MHD_stop_daemon(daemon_);  // also closes the listening socket
  } else if (listen_fd_ >= 0) {
    ::close(listen_fd_);
  }
}

util::Status Server::start(const std::string& host, int port) {
  TY_ASSIGN_OR_RETURN(listen_fd_, listen_socket(host, port, limits_.listen_backlog));
  TY_ASSIGN_OR_RETURN(port_, bound_port(listen_fd_, host, port));
  raise_descriptor_limit(limits_.max_connections);
  // Threads inherit the signal mask of the thread that creates them. Signals belong to the
  // program (the server takes SIGTERM with sigwait on a thread of its own), so the handler pool
  // and libmicrohttpd's threads start with every asynchronous signal blocked; otherwise one of
  // them could take SIGTERM with its default action and end the process without a clean stop.
  const BlockSignals quiet_threads;
  pool_ = std::make_unique<HandlerPool>(limits_.threads);
  daemon_ = MhdCallbacks::start_daemon(*this);
  // The daemon owns the socket now; when it fails to start it may have closed it already, and
  // closing a descriptor number twice could close another thread's file.
  listen_fd_ = -1;
  if (daemon_ == nullptr)
    return listen_failed(host, port,
                         "libmicrohttpd could not start its threads (run with --log-level debug)");
  return util::Status::ok();
}

void Server::wait_and_shut_down() {
  {
    util::UniqueLock lock(mu_);
    while (!stopped_) lock.wait(stopped_cv_);
  }
  // Requests that complete from now on are answered inline on the I/O threads.
  if (pool_) pool_->close();
  if (daemon_ != nullptr) {
    MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
  }
}

void Server::stop() {
  {
    util::MutexLock lock(mu_);
    stopped_ = true;
  }
  stopped_cv_.notify_all();
}

void Server::dispatch(void* connection, Exchange& ex) {
  auto* conn = static_cast<MHD_Connection*>(connection);
  ex.dispatched = true;
  // Suspend before the handoff: a fast handler may resume the connection before this returns.
  MHD_suspend_connection(conn);
  auto task = [this, conn, &ex] {
    ex.reply = respond(ex);
    ex.answered.store(true, std::memory_order_release);
    MHD_resume_connection(conn);
  };
  bool handed_off = false;
  try {
    handed_off = pool_ && pool_->submit(task);
  } catch (...) {
    // Out of memory for the queue: answer here rather than leave the connection suspended.
  }
  if (!handed_off) task();  // also once shutting down
}

Response Server::respond(Exchange& ex) noexcept {
  try {
    Response res;
    callbacks_.handle(ex.req, res);
    return res;
  } catch (const std::exception& e) {
    TY_LOG_ERROR("{} {} failed: {}", ex.req.method, ex.req.path, e.what());
  } catch (...) {
    TY_LOG_ERROR("{} {} failed with an unknown exception", ex.req.method, ex.req.path);
  }
  return error_reply(500, util::internal_error("the server failed on this request; see its log"));
}

Response Server::error_reply(int status, const util::Status& why) noexcept {
  Response res;
  try {
    res = callbacks_.error(status, why);
  } catch (...) {
    res.body =
        R"({"error": {"code": "Internal", "message": "the server failed on this request; see its )"
        R"(log", "field": null}})";
    res.content_type = "application/json";
    res.headers.clear();
  }
  res.status = status;
  return res;
}

bool Server::queue(void* connection, Exchange& ex, Response& res) {
  auto* conn = static_cast<MHD_Connection*>(connection);
  auto body = std::make_unique<std::string>(std::move(res.body));
  MHD_Response* reply = MHD_create_response_from_buffer_with_free_callback_cls(
      body->size(), body->data(), &MhdCallbacks::free_body, body.get());
  if (reply == nullptr) return false;  // out of memory: the caller closes the connection
  body.release();                      // the reply frees it
  MHD_add_response_header(reply, MHD_HTTP_HEADER_CONTENT_TYPE, res.content_type.c_str());
  for (const auto& [name, value] : res.headers)
    MHD_add_response_header(reply, name.c_str(), value.c_str());
  const bool queued = MHD_queue_response(conn, static_cast<unsigned>(res.status), reply) == MHD_YES;
  MHD_destroy_response(reply);
  if (!queued) return false;
  ex.replied = true;
  if (!callbacks_.observe) return true;
  try {
    callbacks_.observe(ex.req, res.status,
                       util::to_seconds(util::WallClock::steady_now() - ex.started));
  } catch (...) {
    // A metric lost is better than a reply lost.
  }
  return true;
}

}  // namespace trainyard::server::http
