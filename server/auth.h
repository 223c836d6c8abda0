// API tokens and who a request acts for. A token is "ty_" + 64 random hex digits; only its
// SHA-256 is stored. An admin sees and changes everything; a team token only its team's jobs.
// Anonymous requests act as admin only when the server allows it (loopback, auth not required).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/ids.h"
#include "util/status.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

struct Principal {
  bool admin = false;
  std::string team;  // for a team token
  std::string name;  // token name, for logs and events

  bool may_access_team(std::string_view t) const { return admin || team == t; }
};

// OK when `who` may see the jobs of `team`; else PermissionDenied naming the job, its team and
// the token's.
util::Status check_job_access(const Principal& who, util::JobId job, std::string_view team);

// A fresh random secret (from the OS's CSPRNG).
util::Result<std::string> generate_token();
// Lowercase hex SHA-256 of `secret`.
std::string hash_token(std::string_view secret);
// "Bearer <token>" -> token (the scheme in any case); empty when the header is not a bearer
// token or the token is empty.
std::string bearer_token(std::string_view authorization_header);
// The token a request presents: "" when it has no Authorization header at all (anonymous, where
// the server allows that). A header that is present but empty, of another scheme or without a
// token is Unauthenticated: such a request meant to authenticate and must not pass as anonymous.
util::Result<std::string> request_token(std::optional<std::string_view> authorization_header);

// Principals of tokens already found in the store, by the token's hash. It has its own lock so
// that authenticating a request never waits for a reconcile cycle to finish.
class TokenCache {
 public:
  std::optional<Principal> find(const std::string& hash) const TY_EXCLUDES(mu_) {
    util::MutexLock lock(mu_);
    auto it = by_hash_.find(hash);
    if (it == by_hash_.end()) return std::nullopt;
    return it->second;
  }
  void put(const std::string& hash, const Principal& who) TY_EXCLUDES(mu_) {
    util::MutexLock lock(mu_);
    by_hash_[hash] = who;
  }

 private:
  mutable util::Mutex mu_;
  std::map<std::string, Principal> by_hash_ TY_GUARDED_BY(mu_);
};

}  // namespace trainyard::server
