// API tokens and who a request acts for. A token is "ty_" + 64 random hex digits; only its
// SHA-256 is stored. An admin sees and changes everything; a team token only its team's jobs.
// Anonymous requests act as admin only when the server allows it (loopback, auth not required).
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace trainyard::server {

struct Principal {
  bool admin = false;
  std::string team;  // for a team token
  std::string name;  // token name, for logs and events

  bool may_access_team(std::string_view t) const { return admin || team == t; }
};

// A fresh random secret (from the OS's CSPRNG).
util::Result<std::string> generate_token();
// Lowercase hex SHA-256 of `secret`.
std::string hash_token(std::string_view secret);
// "Bearer <token>" -> token; empty when the header is absent or not a bearer token.
std::string bearer_token(std::string_view authorization_header);

}  // namespace trainyard::server
