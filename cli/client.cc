#include "cli/client.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "cli/commands.h"

namespace trainyard::cli {
namespace {

util::StatusCode code_from_name(const std::string& name) {
  using util::StatusCode;
  for (auto c :
       {StatusCode::InvalidArgument, StatusCode::NotFound, StatusCode::AlreadyExists,
        StatusCode::FailedPrecondition, StatusCode::OutOfRange, StatusCode::PermissionDenied,
        StatusCode::Unauthenticated, StatusCode::ResourceExhausted, StatusCode::Aborted,
        StatusCode::Unavailable, StatusCode::Internal}) {
    if (util::status_code_name(c) == name) return c;
  }
  return StatusCode::Internal;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

}  // namespace

void add_client_options(CLI::App& cmd, ClientOptions& options) {
  cmd.add_option("--server", options.server,
                 "API address (default: $TRAINYARD_SERVER or http://127.0.0.1:8765); the token "
                 "comes from $TRAINYARD_TOKEN");
}

void add_idempotency_option(CLI::App& cmd, std::string& key) {
  cmd.add_option("--idempotency-key", key,
                 "Key that makes the submission safe to repeat: the server creates one job per "
                 "key for 24 hours and answers repeats with it (default: a fresh random key, "
                 "reused only by this command's own retries)");
}

ApiClient::ApiClient(ClientOptions options)
    : server_(options.server.empty() ? env_or("TRAINYARD_SERVER", kDefaultServer) : options.server),
      token_(options.token.empty() ? env_or("TRAINYARD_TOKEN", "") : options.token) {
  if (server_.find("://") == std::string::npos) server_ = "http://" + server_;
  while (!server_.empty() && server_.back() == '/') server_.pop_back();
  http_ = std::make_unique<httplib::Client>(server_);
  http_->set_tcp_nodelay(true);  // see server/http_api.cc
  http_->set_connection_timeout(5, 0);
  http_->set_read_timeout(60, 0);
  http_->set_write_timeout(60, 0);
  if (!token_.empty()) http_->set_bearer_token_auth(token_.c_str());
}

ApiClient::~ApiClient() = default;

util::Result<RawResponse> ApiClient::request(const std::string& method, const std::string& path,
                                             const std::string& body,
                                             const std::string& content_type,
                                             const Headers& headers, bool* retryable) {
  httplib::Headers h(headers.begin(), headers.end());
  httplib::Result res = method == "GET"    ? http_->Get(path, h)
                        : method == "POST" ? http_->Post(path, h, body, content_type)
                                           : http_->Delete(path, h);
  if (retryable != nullptr) *retryable = !res || res->status >= 500;
  if (!res) {
    return util::unavailable(fmt::format(
        "cannot reach the trainyard server at {} ({}); start it with `trainyard server` or "
        "point --server / TRAINYARD_SERVER at it",
        server_, httplib::to_string(res.error())));
  }
  RawResponse out{.body = res->body};
  for (const auto& [k, v] : res->headers) out.headers[k] = v;
  if (res->status >= 200 && res->status < 300) return out;
  const auto j = nlohmann::json::parse(res->body, nullptr, false);
  if (!j.is_discarded() && j.contains("error") && j["error"].is_object()) {
    const auto& e = j["error"];
    return util::Status(code_from_name(e.value("code", "Internal")),
                        e.value("message", "unknown error"));
  }
  return util::Status(util::StatusCode::Internal,
                      fmt::format("the server answered HTTP {}", res->status));
}

util::Result<nlohmann::json> ApiClient::get(const std::string& path) {
  TY_ASSIGN_OR_RETURN(auto raw, request("GET", path, "", ""));
  auto j = nlohmann::json::parse(raw.body, nullptr, false);
  if (j.is_discarded()) return util::internal_error("the server's reply is not JSON");
  return j;
}

util::Result<nlohmann::json> ApiClient::post(const std::string& path, const std::string& body,
                                             const std::string& content_type) {
  TY_ASSIGN_OR_RETURN(auto raw, request("POST", path, body, content_type));
  auto j = nlohmann::json::parse(raw.body, nullptr, false);
  if (j.is_discarded()) return util::internal_error("the server's reply is not JSON");
  return j;
}

util::Result<nlohmann::json> ApiClient::post_idempotent(const std::string& path,
                                                        const std::string& body,
                                                        const std::string& content_type,
                                                        const std::string& idempotency_key,
                                                        const RetryPolicy& retry) {
  const Headers headers = {{"Idempotency-Key", quote_idempotency_key(idempotency_key)}};
  double delay = retry.first_delay_seconds;
  for (int attempt = 1;; ++attempt) {
    bool retryable = false;
    auto raw = request("POST", path, body, content_type, headers, &retryable);
    if (raw.is_ok()) {
      auto j = nlohmann::json::parse(raw->body, nullptr, false);
      if (j.is_discarded()) return util::internal_error("the server's reply is not JSON");
      return j;
    }
    if (!retryable) return raw.status();
    if (attempt >= retry.attempts) {
      if (attempt == 1) return raw.status();
      return util::Status(
          raw.status().code(),
          fmt::format("{} (tried {} times with Idempotency-Key {}; repeating the "
                      "command with --idempotency-key {} cannot create a second "
                      "job)",
                      raw.status().message(), attempt, idempotency_key, idempotency_key));
    }
    // The request may have been carried out with its reply lost: the same key makes the server
    // answer a repeat with that job instead of creating another.
    std::fprintf(stderr, "trainyard: no answer from %s (%s); retrying in %.1fs (%d/%d)\n",
                 server_.c_str(), raw.status().message().c_str(), delay, attempt + 1,
                 retry.attempts);
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    delay *= 2;
  }
}

util::Result<nlohmann::json> ApiClient::del(const std::string& path) {
  TY_ASSIGN_OR_RETURN(auto raw, request("DELETE", path, "", ""));
  auto j = nlohmann::json::parse(raw.body, nullptr, false);
  if (j.is_discarded()) return util::internal_error("the server's reply is not JSON");
  return j;
}

util::Result<RawResponse> ApiClient::get_raw(const std::string& path) {
  return request("GET", path, "", "");
}

int exit_code_for(const util::Status& st) {
  switch (st.code()) {
    case util::StatusCode::Ok:
      return kExitOk;
    case util::StatusCode::InvalidArgument:
    case util::StatusCode::OutOfRange:
      return kExitBadInput;
    case util::StatusCode::NotFound:
      return kExitNotFound;
    case util::StatusCode::PermissionDenied:
    case util::StatusCode::Unauthenticated:
      return kExitRefused;
    case util::StatusCode::Unavailable:
      return kExitUnreachable;
    default:
      return kExitFailure;
  }
}

int report(const std::string& cmd, const util::Status& st) {
  std::fprintf(stderr, "trainyard %s: %s\n", cmd.c_str(), st.message().c_str());
  return exit_code_for(st);
}

std::string new_idempotency_key() {
  std::random_device rd;
  std::string key;
  for (int i = 0; i < 4; ++i) key += fmt::format("{:08x}", static_cast<uint32_t>(rd()));
  return key;
}

util::Status check_idempotency_key(const std::string& key) {
  if (key.empty() || key.size() > 255)
    return util::invalid_argument(
        fmt::format("--idempotency-key must have 1 to 255 characters, got {}", key.size()));
  for (char c : key) {
    if (c < 0x20 || c > 0x7e)
      return util::invalid_argument(
          "--idempotency-key may hold printable ASCII characters only (letters, digits, "
          "punctuation, spaces)");
  }
  return util::Status::ok();
}

std::string quote_idempotency_key(const std::string& key) {
  std::string out = "\"";
  for (char c : key) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace trainyard::cli
