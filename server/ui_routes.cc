#include "server/ui_routes.h"

#include <cctype>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "server/http_api.h"
#include "web/assets.h"

namespace trainyard::server {
namespace {

// Only the UI's own files, scripts and API calls; no inline script or style, no framing.
constexpr const char* kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whether an Accept-Encoding header (RFC 9110 12.5.3) accepts gzip: listed (or "*") without
// q=0.
bool accepts_gzip(const std::string* header) {
  if (header == nullptr) return false;
  const std::string value = lowercase(*header);
  std::string_view rest = value;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t semi = item.find(';');
    const std::string_view coding = trim(item.substr(0, semi));
    if (coding != "gzip" && coding != "x-gzip" && coding != "*") continue;
    if (semi == std::string_view::npos) return true;
    std::string_view q = trim(item.substr(semi + 1));
    if (!q.starts_with("q=")) return true;
    q.remove_prefix(2);
    return q.find_first_not_of("0.") != std::string_view::npos;  // q=0, 0.0, 0.000: refused
  }
  return false;
}

// Whether If-None-Match lists `etag` (weak or strong) or is "*".
bool etag_matches(const std::string* header, const std::string& etag) {
  if (header == nullptr) return false;
  std::string_view rest = *header;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.starts_with("W/")) item.remove_prefix(2);
    if (item == "*" || item == etag) return true;
  }
  return false;
}

}  // namespace

http::Response ui_asset_response(std::string_view name, const std::string* accept_encoding,
                                 const std::string* if_none_match) {
  const web::Asset* asset = web::find_asset(name);
  if (asset == nullptr)
    return error_response(util::not_found(
        fmt::format("no web UI file '{}'; the UI starts at / (docs/web-ui.md)", name)));
  const bool gzip = accepts_gzip(accept_encoding);
  // One ETag per representation: the gzip bytes differ from the raw ones.
  const std::string etag = fmt::format("\"{}{}\"", asset->etag, gzip ? "-gz" : "");
  http::Response res;
  res.content_type = std::string(asset->content_type);
  res.set_header("ETag", etag);
  // Names are fixed (app.js), so a browser revalidates every time; unchanged files cost a 304.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Vary", "Accept-Encoding");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  res.set_header("Referrer-Policy", "no-referrer");
  if (etag_matches(if_none_match, etag)) {
    res.status = 304;
    return res;
  }
  const auto bytes = gzip ? asset->gzip : asset->raw;
  res.body.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (gzip) res.set_header("Content-Encoding", "gzip");
  return res;
}

void add_ui_routes(http::Router& router) {
  auto serve = [](std::string_view name) {
    return [name](const http::Request& req, http::Response& res) {
      res = ui_asset_response(name, req.header("Accept-Encoding"), req.header("If-None-Match"));
    };
  };
  router.add("GET", "/", serve("index.html"));
  // Browsers ask for /favicon.ico on their own (a new window, a JSON reply opened in a tab).
  router.add("GET", "/favicon.ico", serve("favicon.svg"));
  router.add("GET", "/ui/([A-Za-z0-9._-]+)", [](const http::Request& req, http::Response& res) {
    res = ui_asset_response(req.matches[1], req.header("Accept-Encoding"),
                            req.header("If-None-Match"));
  });
}

}  // namespace trainyard::server
