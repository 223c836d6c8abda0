// The CLI's HTTP client for the trainyard API: server address from --server or
// TRAINYARD_SERVER, token from TRAINYARD_TOKEN, API errors turned back into util::Status with
// the server's message, and Status codes mapped to the exit codes scripts rely on. Submissions
// go through post_idempotent(), which retries with one idempotency key so none is stored twice.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "util/status.h"

namespace httplib {
class Client;
}

namespace trainyard::cli {

inline constexpr const char* kDefaultServer = "http://127.0.0.1:8765";

struct ClientOptions {
  std::string server;  // empty = TRAINYARD_SERVER, else kDefaultServer
  std::string token;   // empty = TRAINYARD_TOKEN
};

// Adds --server to a subcommand.
void add_client_options(CLI::App& cmd, ClientOptions& options);
// Adds --idempotency-key to a verb that submits (submit, run).
void add_idempotency_option(CLI::App& cmd, std::string& key);

struct RawResponse {
  std::string body;
  std::map<std::string, std::string> headers;
};

// How post_idempotent() retries: attempts in all, and the wait before the second one, doubled
// before each further one (0.5, 1, 2, 4 s: a server restart fits in the 7.5 s).
struct RetryPolicy {
  int attempts = 5;
  double first_delay_seconds = 0.5;
};

class ApiClient {
 public:
  explicit ApiClient(ClientOptions options);
  ~ApiClient();
  util::Result<nlohmann::json> get(const std::string& path);
  util::Result<nlohmann::json> post(const std::string& path, const std::string& body,
                                    const std::string& content_type);
  // POST with an Idempotency-Key header (docs/api.md): when no reply comes (the connection
  // fails or times out) or the reply is a 5xx, the same request is sent again with the same key,
  // so the server acts on it once however many replies were lost. Each retry is said on stderr.
  // Replies other than 2xx and 5xx are returned at once.
  util::Result<nlohmann::json> post_idempotent(const std::string& path, const std::string& body,
                                               const std::string& content_type,
                                               const std::string& idempotency_key,
                                               const RetryPolicy& retry = {});
  util::Result<nlohmann::json> del(const std::string& path);
  util::Result<RawResponse> get_raw(const std::string& path);
  const std::string& server() const { return server_; }

 private:
  using Headers = std::vector<std::pair<std::string, std::string>>;
  // One exchange. `retryable` (when given) is set when repeating it may succeed: no reply, or a
  // 5xx reply.
  util::Result<RawResponse> request(const std::string& method, const std::string& path,
                                    const std::string& body, const std::string& content_type,
                                    const Headers& headers = {}, bool* retryable = nullptr);
  std::string server_;
  std::string token_;
  std::unique_ptr<httplib::Client> http_;
};

// Exit codes: 0 ok, 1 failure, 2 bad input, 3 not found, 4 refused (auth), 5 server unreachable.
int exit_code_for(const util::Status& st);
// Prints "trainyard <cmd>: <message>" to stderr and returns exit_code_for(st).
int report(const std::string& cmd, const util::Status& st);
// URL-encodes a query parameter value.
std::string url_encode(const std::string& s);

// A fresh idempotency key: 32 random hex digits (128 bits from std::random_device).
std::string new_idempotency_key();
// Checks a key given with --idempotency-key: 1 to 255 printable ASCII characters, the server's
// rule; InvalidArgument naming the option otherwise.
util::Status check_idempotency_key(const std::string& key);
// The key as an RFC 8941 string ("..." with \" and \\ escaped), the header's form in the IETF
// draft; the server reads the quoted and the bare form as the same key.
std::string quote_idempotency_key(const std::string& key);

}  // namespace trainyard::cli
