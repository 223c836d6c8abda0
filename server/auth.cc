#include "server/auth.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

namespace trainyard::server {
namespace {

std::string to_hex(const unsigned char* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return out;
}

}  // namespace

util::Result<std::string> generate_token() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    return util::internal_error("cannot read random bytes for a token (OpenSSL RAND_bytes)");
  return "ty_" + to_hex(bytes.data(), bytes.size());
}

std::string hash_token(std::string_view secret) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  EVP_Digest(secret.data(), secret.size(), md.data(), &len, EVP_sha256(), nullptr);
  return to_hex(md.data(), len);
}

std::string bearer_token(std::string_view header) {
  constexpr std::string_view kScheme = "bearer";
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  if (header.size() <= kScheme.size() || header[kScheme.size()] != ' ') return "";
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return "";
  header.remove_prefix(kScheme.size());
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  while (!header.empty() && (header.back() == ' ' || header.back() == '\r'))
    header.remove_suffix(1);
  return std::string(header);
}

util::Result<std::string> request_token(std::optional<std::string_view> header) {
  if (!header) return std::string();
  std::string token = bearer_token(*header);
  if (!token.empty()) return token;
  // Name the scheme that was sent, never the credentials after it.
  std::string_view scheme = *header;
  while (!scheme.empty() && scheme.front() == ' ') scheme.remove_prefix(1);
  scheme = scheme.substr(0, std::min(scheme.find(' '), size_t{32}));
  const std::string got = scheme.empty() ? "it is empty"
                          : bearer_token(std::string(scheme) + " x").empty()
                              ? fmt::format("it uses the scheme '{}'", scheme)
                              : "the token after 'Bearer' is empty";
  return util::Status(util::StatusCode::Unauthenticated,
                      fmt::format("the Authorization header must be 'Bearer <token>', but {}: "
                                  "send a trainyard token (set TRAINYARD_TOKEN), or no "
                                  "Authorization header at all where anonymous access is allowed",
                                  got));
}

util::Status check_job_access(const Principal& who, util::JobId job, std::string_view team) {
  if (who.may_access_team(team)) return util::Status::ok();
  return util::Status(util::StatusCode::PermissionDenied,
                      fmt::format("job {} belongs to team '{}'; your token is for team '{}'",
                                  job.value(), team, who.team));
}

}  // namespace trainyard::server
