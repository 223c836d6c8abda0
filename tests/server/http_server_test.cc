// http::Server and http::Router over real sockets, and the Authorization header rules.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "server/auth.h"

namespace trainyard::server::http {
namespace {

using namespace std::chrono_literals;

ServerCallbacks echo_callbacks(std::atomic<int>* observed = nullptr) {
  return {.handle =
              [](Request& req, Response& res) {
                if (req.path == "/throw") throw std::runtime_error("handler bug");
                if (req.path == "/slow") std::this_thread::sleep_for(800ms);
                res.body = req.method + " " + req.path + " q=" + req.param("q") +
                           " h=" + (req.header("x-thing") ? *req.header("X-Thing") : "-") +
                           " body=" + req.body;
                res.content_type = "text/plain";
                res.set_header("X-Extra", "1");
              },
          .error =
              [](int status, const util::Status& why) {
                return Response{.status = 0,
                                .body = std::to_string(status) + ":" + why.message(),
                                .content_type = "application/json",
                                .headers = {}};
              },
          .observe =
              [observed](const Request&, int, double) {
                if (observed) observed->fetch_add(1);
              }};
}

// A server on 127.0.0.1:<free port>, waited for on its own thread.
struct Running {
  explicit Running(ServerLimits limits, ServerCallbacks callbacks = echo_callbacks())
      : server(limits, std::move(callbacks)) {
    const util::Status st = server.start("127.0.0.1", 0);
    EXPECT_TRUE(st.is_ok()) << st.message();
    thread = std::thread([this] { server.wait_and_shut_down(); });
  }
  ~Running() {
    server.stop();
    thread.join();
  }
  Server server;
  std::thread thread;
};

TEST(HttpRouter, MatchesMethodAndWholePathInOrder) {
  Router r;
  int hit = 0;
  r.add("GET", R"(/jobs/([^/]+))", [&](const Request&, Response&) { hit = 1; });
  r.add("GET", R"(/jobs/([^/]+)/logs)", [&](const Request&, Response&) { hit = 2; });
  r.add("DELETE", R"(/jobs/([^/]+))", [&](const Request&, Response&) { hit = 3; });
  Request req{.method = "GET", .path = "/jobs/17/logs"};
  const Handler* h = r.find(req);
  ASSERT_NE(h, nullptr);
  Response res;
  (*h)(req, res);
  EXPECT_EQ(hit, 2);
  ASSERT_EQ(req.matches.size(), 2u);
  EXPECT_EQ(req.matches[1], "17");

  Request head{.method = "HEAD", .path = "/jobs/5"};
  ASSERT_NE(r.find(head), nullptr);
  (*r.find(head))(head, res);
  EXPECT_EQ(hit, 1);
  Request del{.method = "DELETE", .path = "/jobs/5"};
  (*r.find(del))(del, res);
  EXPECT_EQ(hit, 3);
  Request put{.method = "PUT", .path = "/jobs/5"};
  EXPECT_EQ(r.find(put), nullptr);
  Request prefix{.method = "GET", .path = "/jobs/5/logs/more"};
  EXPECT_EQ(r.find(prefix), nullptr);
}

TEST(HttpServer, PassesParamsHeadersAndRawBodies) {
  std::atomic<int> observed{0};
  Running r(ServerLimits{.threads = 2, .io_threads = 1}, echo_callbacks(&observed));
  httplib::Client cli("127.0.0.1", r.server.port());
  auto res = cli.Get("/a/b?q=x%20y&q=second", {{"X-Thing", "hello"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "GET /a/b q=x y h=hello body=");
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain");
  EXPECT_EQ(res->get_header_value("X-Extra"), "1");
  // A form-encoded body is not parsed as a form: the handler sees the bytes.
  const std::string form(20000, 'a');
  res = cli.Post("/p", "k=v&" + form, "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "POST /p q= h=- body=k=v&" + form);
  EXPECT_EQ(observed.load(), 2);
}

TEST(HttpServer, AHandlerThatWaitsDelaysNoOtherConnection) {
  // One I/O thread for every connection: a handler running on it would stall them all.
  Running r(ServerLimits{.threads = 2, .io_threads = 1});
  std::thread slow([&] {
    httplib::Client cli("127.0.0.1", r.server.port());
    auto res = cli.Get("/slow");
    EXPECT_TRUE(res && res->status == 200);
  });
  std::this_thread::sleep_for(100ms);  // the slow request is in its handler
  httplib::Client cli("127.0.0.1", r.server.port());
  const auto t0 = std::chrono::steady_clock::now();
  auto res = cli.Get("/fast");
  const auto took = std::chrono::steady_clock::now() - t0;
  slow.join();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_LT(took, 400ms) << "the fast request waited for the slow handler";
}

TEST(HttpServer, RefusesBodiesOverTheLimitWith413) {
  Running r(ServerLimits{.threads = 2, .io_threads = 1, .max_body_bytes = 1000});
  httplib::Client cli("127.0.0.1", r.server.port());
  auto res = cli.Post("/p", std::string(1001, 'x'), "application/yaml");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_NE(res->body.find("413:"), std::string::npos) << res->body;
  EXPECT_NE(res->body.find("1000 bytes"), std::string::npos) << res->body;
  res = cli.Post("/p", std::string(1000, 'x'), "application/yaml");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HttpServer, AnExceptionInAHandlerIs500AndTheServerGoesOn) {
  Running r(ServerLimits{.threads = 2, .io_threads = 1});
  httplib::Client cli("127.0.0.1", r.server.port());
  auto res = cli.Get("/throw");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  EXPECT_EQ(res->body, "500:the server failed on this request; see its log");
  res = cli.Get("/fine");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HttpServer, TooManyHeaderBytesGet431) {
  Running r(ServerLimits{.threads = 2, .io_threads = 1, .connection_memory_bytes = 16 * 1024});
  httplib::Client cli("127.0.0.1", r.server.port());
  httplib::Headers many;
  for (int i = 0; i < 2000; ++i) many.emplace("X-H" + std::to_string(i), "value");
  auto res = cli.Get("/x", many);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 431);
}

TEST(HttpServer, ClosesAConnectionThatSendsNothing) {
  Running r(ServerLimits{.threads = 2, .io_threads = 1, .idle_timeout_seconds = 1});
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(r.server.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::send(fd, "GET / HTTP/1.1\r\n", 16, 0), 16);  // and nothing more
  timeval wait{.tv_sec = 5, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  const auto t0 = std::chrono::steady_clock::now();
  char buf[64];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  const auto took = std::chrono::steady_clock::now() - t0;
  ::close(fd);
  EXPECT_LE(n, 0) << "the server answered an unfinished request";
  EXPECT_LT(took, 4s) << "the idle connection was not closed";
}

TEST(HttpServer, ReportsATakenPortAndListensOnIpv6Loopback) {
  Running first(ServerLimits{.threads = 2, .io_threads = 1});
  Server second(ServerLimits{.threads = 2, .io_threads = 1}, echo_callbacks());
  const util::Status st = second.start("127.0.0.1", first.server.port());
  EXPECT_EQ(st.code(), util::StatusCode::Unavailable);
  EXPECT_NE(st.message().find("cannot listen on 127.0.0.1:"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--listen"), std::string::npos) << st.message();

  Server v6(ServerLimits{.threads = 2, .io_threads = 1}, echo_callbacks());
  if (!v6.start("::1", 0).is_ok()) GTEST_SKIP() << "no IPv6 loopback here";
  std::thread t([&] { v6.wait_and_shut_down(); });
  httplib::Client cli("::1", v6.port());
  auto res = cli.Get("/six");
  v6.stop();
  t.join();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HttpServer, StopBeforeWaitAndFromAHandler) {
  Server early(ServerLimits{.threads = 2, .io_threads = 1}, echo_callbacks());
  ASSERT_TRUE(early.start("127.0.0.1", 0).is_ok());
  early.stop();
  early.wait_and_shut_down();  // returns at once

  // A handler that stops the server must not deadlock it; its own reply may be cut short.
  Server* self = nullptr;
  std::atomic<bool> handled{false};
  ServerCallbacks cb = echo_callbacks();
  cb.handle = [&](Request&, Response& res) {
    self->stop();
    handled = true;
    res.body = "bye";
  };
  Server s(ServerLimits{.threads = 2, .io_threads = 1}, std::move(cb));
  self = &s;
  ASSERT_TRUE(s.start("127.0.0.1", 0).is_ok());
  std::thread t([&] { s.wait_and_shut_down(); });
  httplib::Client cli("127.0.0.1", s.port());
  cli.set_read_timeout(5, 0);
  (void)cli.Get("/stop");
  t.join();
  EXPECT_TRUE(handled.load());
}

}  // namespace
}  // namespace trainyard::server::http

namespace trainyard::server {
namespace {

TEST(RequestToken, OnlyAMissingHeaderIsAnonymous) {
  auto none = request_token(std::nullopt);
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ(*none, "");
  auto good = request_token("Bearer ty_abc");
  ASSERT_TRUE(good.is_ok());
  EXPECT_EQ(*good, "ty_abc");
  EXPECT_EQ(*request_token("bearer   ty_abc  "), "ty_abc");
  for (const char* bad : {"", "Bearer", "Bearer ", "Bearer    ", "Basic dXNlcjpwYXNz", "ty_abc"}) {
    auto r = request_token(std::string_view(bad));
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().code(), util::StatusCode::Unauthenticated) << bad;
    EXPECT_NE(r.status().message().find("Authorization header"), std::string::npos);
    EXPECT_EQ(r.status().message().find("dXNlcjpwYXNz"), std::string::npos) << "echoed a secret";
  }
}

}  // namespace
}  // namespace trainyard::server
