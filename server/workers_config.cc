// The server config's `workers:` section: which Unix user runs each team's workers when the
// server is root. `user: auto` (each team its own uid from uidRange), a user name or uid for all
// teams, and `runAs: {team: user}` per team. Names are resolved here, so a typo stops the server
// at start with file:line instead of failing every launch later.
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "model/names.h"
#include "server/config.h"

namespace trainyard::server {
namespace {

util::Status located(const std::string& file, const YAML::Node& n, const std::string& msg) {
  const auto m = n.Mark();
  if (m.is_null()) return util::invalid_argument(fmt::format("{}: {}", file, msg));
  return util::invalid_argument(fmt::format("{}:{}:{}: {}", file, m.line + 1, m.column + 1, msg));
}

bool parse_u32(std::string_view text, uint32_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

// The supplementary groups /etc/group gives `name`, without its primary group.
std::vector<uint32_t> groups_of(const char* name, gid_t primary) {
  int n = 64;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  if (::getgrouplist(name, primary, groups.data(), &n) < 0) {
    groups.resize(static_cast<size_t>(n));
    if (::getgrouplist(name, primary, groups.data(), &n) < 0) return {};
  }
  groups.resize(static_cast<size_t>(n));
  std::vector<uint32_t> out;
  for (gid_t g : groups)
    if (g != primary) out.push_back(g);
  return out;
}

util::Status parse_uid_range(const std::string& file, const YAML::Node& n, WorkersConfig& w) {
  const std::string text = n.IsScalar() ? n.Scalar() : "";
  const size_t dash = text.find('-');
  uint32_t first = 0;
  uint32_t last = 0;
  if (dash == std::string::npos || !parse_u32(text.substr(0, dash), first) ||
      !parse_u32(text.substr(dash + 1), last) || first == 0 || last < first ||
      last == static_cast<uint32_t>(-1)) {
    return located(file, n,
                   fmt::format("workers.uidRange must be FIRST-LAST like 1900000-1965535, with "
                               "0 < FIRST <= LAST < 4294967295; got '{}'",
                               n.IsScalar() ? n.Scalar() : "(not a scalar)"));
  }
  w.uid_first = first;
  w.uid_last = last;
  return util::Status::ok();
}

util::Result<exec::Credentials> user_value(const std::string& file, const YAML::Node& n,
                                           const std::string& what) {
  if (!n.IsScalar() || n.Scalar().empty())
    return located(file, n, what + " must be a user name or a numeric uid");
  auto creds = resolve_worker_user(n.Scalar());
  if (!creds.is_ok()) return located(file, n, what + ": " + creds.status().message());
  return *creds;
}

}  // namespace

util::Result<exec::Credentials> resolve_worker_user(const std::string& name_or_uid) {
  uint32_t uid = 0;
  const bool numeric = parse_u32(name_or_uid, uid);
  if (numeric && uid == static_cast<uint32_t>(-1))
    return util::invalid_argument("uid 4294967295 is not a valid user");
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(static_cast<size_t>(size > 0 ? size : 16384));
  passwd pw{};
  passwd* found = nullptr;
  int err = numeric ? ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found)
                    : ::getpwnam_r(name_or_uid.c_str(), &pw, buf.data(), buf.size(), &found);
  if (found == nullptr) {
    if (!numeric) {
      return util::not_found(fmt::format(
          "no user '{}' on this machine{}; create it (useradd --system --no-create-home {}) or "
          "give a numeric uid",
          name_or_uid, err != 0 ? fmt::format(" (lookup failed: {})", std::strerror(err)) : "",
          name_or_uid));
    }
    return exec::Credentials{.uid = uid, .gid = uid, .groups = {}, .user = name_or_uid, .home = ""};
  }
  return exec::Credentials{.uid = pw.pw_uid,
                           .gid = pw.pw_gid,
                           .groups = groups_of(pw.pw_name, pw.pw_gid),
                           .user = pw.pw_name,
                           .home = pw.pw_dir != nullptr ? pw.pw_dir : ""};
}

util::Status parse_workers_config(const std::string& file, const YAML::Node& n, ServerConfig& out) {
  if (!n.IsMap())
    return located(file, n,
                   "workers must be a mapping like {user: auto, uidRange: 1900000-1965535}");
  WorkersConfig& w = out.workers;
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    if (key == "user") {
      if (kv.second.IsScalar() && kv.second.Scalar() == "auto") {
        w.user.reset();
        continue;
      }
      TY_ASSIGN_OR_RETURN(w.user, user_value(file, kv.second, "workers.user"));
    } else if (key == "uidRange") {
      TY_RETURN_IF_ERROR(parse_uid_range(file, kv.second, w));
    } else if (key == "runAs") {
      if (!kv.second.IsMap())
        return located(file, kv.second,
                       "workers.runAs must map team names to users: {vision: svc}");
      for (const auto& team : kv.second) {
        const std::string name = team.first.as<std::string>();
        if (auto st = model::check_team_name(name); !st.is_ok())
          return located(file, team.first, "workers.runAs: " + st.message());
        TY_ASSIGN_OR_RETURN(w.run_as[name], user_value(file, team.second, "workers.runAs." + name));
      }
    } else {
      return located(file, kv.first,
                     fmt::format("unknown key 'workers.{}'; allowed: user, uidRange, runAs", key));
    }
  }
  return util::Status::ok();
}

}  // namespace trainyard::server
