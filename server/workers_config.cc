// The server config's `workers:` section: which Unix user runs each team's workers when the
// server is root. `user: auto` (each team its own uid from uidRange), a user name or uid for all
// teams, and `runAs: {team: user}` per team. Names are resolved here, so a typo stops the server
// at start with file:line:column instead of failing every launch later.
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "model/names.h"
#include "model/yaml_reader.h"
#include "server/config.h"

namespace trainyard::server {
namespace {

using model::YamlField;
using model::YamlFields;
using model::YamlReader;

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

util::Status parse_uid_range(const YamlReader& r, const YamlField& f, WorkersConfig& w) {
  const std::string text = f.value.IsScalar() ? f.value.Scalar() : "";
  const size_t dash = text.find('-');
  uint32_t first = 0;
  uint32_t last = 0;
  if (dash == std::string::npos || !parse_u32(text.substr(0, dash), first) ||
      !parse_u32(text.substr(dash + 1), last) || first == 0 || last < first ||
      last == static_cast<uint32_t>(-1)) {
    return r.invalid(f, "FIRST-LAST like 1900000-1965535", "0 < FIRST <= LAST < 4294967295");
  }
  w.uid_first = first;
  w.uid_last = last;
  return util::Status::ok();
}

util::Result<exec::Credentials> user_value(const YamlReader& r, const YamlField& f) {
  if (!f.value.IsScalar() || f.value.Scalar().empty())
    return r.invalid(f, "a user name or a numeric uid");
  TY_ASSIGN_OR_RETURN(const std::string name, r.string(f));
  auto creds = resolve_worker_user(name);
  if (!creds.is_ok()) return r.error(f, fmt::format("{}: {}", f.path, creds.status().message()));
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

util::Status parse_workers_config(const YamlReader& r, const YamlField& section,
                                  ServerConfig& out) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(section, {"user", "uidRange", "runAs"}));
  WorkersConfig& w = out.workers;
  if (const YamlField* user = f.get("user")) {
    if (user->value.IsScalar() && user->value.Scalar() == "auto") {
      w.user.reset();
    } else {
      TY_ASSIGN_OR_RETURN(w.user, user_value(r, *user));
    }
  }
  if (const YamlField* range = f.get("uidRange")) TY_RETURN_IF_ERROR(parse_uid_range(r, *range, w));
  if (const YamlField* run_as = f.get("runAs")) {
    TY_ASSIGN_OR_RETURN(std::vector<YamlField> teams,
                        r.entries(*run_as, "a mapping of team names to users, e.g. {vision: svc}"));
    for (const YamlField& team : teams) {
      const std::string& name = team.key.Scalar();
      if (auto st = model::check_team_name(name); !st.is_ok())
        return r.error_at(team.key, fmt::format("{}: {}", team.path, st.message()));
      TY_ASSIGN_OR_RETURN(w.run_as[name], user_value(r, team));
    }
  }
  return util::Status::ok();
}

}  // namespace trainyard::server
