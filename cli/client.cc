#include "cli/client.h"

#include <cstdio>
#include <cstdlib>

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
                                             const std::string& content_type) {
  httplib::Result res = method == "GET"    ? http_->Get(path.c_str())
                        : method == "POST" ? http_->Post(path.c_str(), body, content_type.c_str())
                                           : http_->Delete(path.c_str());
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
