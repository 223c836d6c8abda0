// The CLI's HTTP client for the trainyard API: server address from --server or
// TRAINYARD_SERVER, token from TRAINYARD_TOKEN, API errors turned back into util::Status with
// the server's message, and Status codes mapped to the exit codes scripts rely on.
#pragma once

#include <map>
#include <memory>
#include <string>

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

struct RawResponse {
  std::string body;
  std::map<std::string, std::string> headers;
};

class ApiClient {
 public:
  explicit ApiClient(ClientOptions options);
  ~ApiClient();
  util::Result<nlohmann::json> get(const std::string& path);
  util::Result<nlohmann::json> post(const std::string& path, const std::string& body,
                                    const std::string& content_type);
  util::Result<nlohmann::json> del(const std::string& path);
  util::Result<RawResponse> get_raw(const std::string& path);
  const std::string& server() const { return server_; }

 private:
  util::Result<RawResponse> request(const std::string& method, const std::string& path,
                                    const std::string& body, const std::string& content_type);
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

}  // namespace trainyard::cli
