#include "server/worker_identity.h"

#include <grp.h>
#include <pwd.h>

#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/state_dir.h"
#include "util/read_file.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

constexpr const char* kMapFormat = "trainyard-worker-uids";

}  // namespace

util::Result<std::unique_ptr<WorkerIdentities>> WorkerIdentities::open(
    const WorkersConfig& config, std::filesystem::path map_file, bool isolate) {
  std::unique_ptr<WorkerIdentities> ids(new WorkerIdentities(config, std::move(map_file), isolate));
  TY_RETURN_IF_ERROR(ids->load());
  return ids;
}

util::Status WorkerIdentities::load() {
  auto text = util::read_file(map_file_);
  if (!text.is_ok()) {
    // Not opened: no team has had a uid yet. Opened but not read: as unusable as bad JSON.
    if (text.status().code() == util::StatusCode::NotFound) return util::Status::ok();
    text = std::string();
  }
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  const auto bad = [&](const std::string& why) {
    return util::failed_precondition(fmt::format(
        "{}: {}; it maps teams to the uids that own their checkpoints: restore it from a backup, "
        "or remove it (teams then get new uids; chown their checkpoints/<id> dirs to match)",
        map_file_.string(), why));
  };
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kMapFormat ||
      !j.contains("teams") || !j["teams"].is_object())
    return bad(fmt::format("not a {} file", kMapFormat));
  util::MutexLock lock(mu_);  // not shared yet (open() calls this), but uids_ is guarded
  for (const auto& [team, uid] : j["teams"].items()) {
    if (!uid.is_number_unsigned() || uid.get<uint64_t>() == 0 || uid.get<uint64_t>() >= 0xffffffff)
      return bad(fmt::format("team '{}' has no valid uid", team));
    uids_[team] = uid.get<uint32_t>();
  }
  return util::Status::ok();
}

util::Status WorkerIdentities::save() const {
  nlohmann::json teams = nlohmann::json::object();
  for (const auto& [team, uid] : uids_) teams[team] = uid;
  const nlohmann::json j = {{"format", kMapFormat}, {"version", 1}, {"teams", teams}};
  return write_private_file(map_file_, j.dump(2) + "\n");
}

exec::Credentials WorkerIdentities::auto_user(uint32_t uid) {
  return exec::Credentials{
      .uid = uid, .gid = uid, .groups = {}, .user = std::to_string(uid), .home = ""};
}

std::optional<exec::Credentials> WorkerIdentities::configured(const std::string& team) const {
  if (auto it = config_.run_as.find(team); it != config_.run_as.end()) return it->second;
  return config_.user;
}

util::Result<std::optional<exec::Credentials>> WorkerIdentities::for_launch(
    const std::string& team) {
  if (!isolate_) return std::optional<exec::Credentials>();
  if (auto c = configured(team)) return c;
  util::MutexLock lock(mu_);
  if (auto it = uids_.find(team); it != uids_.end()) return std::optional(auto_user(it->second));
  std::set<uint32_t> taken;
  for (const auto& [t, uid] : uids_) taken.insert(uid);
  for (const auto& [t, c] : config_.run_as) taken.insert(c.uid);
  for (uint64_t uid = config_.uid_first; uid <= config_.uid_last; ++uid) {
    const auto u = static_cast<uint32_t>(uid);
    // A uid or gid some account already has would give the team that account's files.
    if (taken.contains(u) || ::getpwuid(u) != nullptr || ::getgrgid(u) != nullptr) continue;
    uids_[team] = u;
    if (util::Status st = save(); !st.is_ok()) {
      uids_.erase(team);
      return st;
    }
    return std::optional(auto_user(u));
  }
  return util::failed_precondition(
      fmt::format("no free uid left in workers.uidRange {}-{} for team '{}'; widen the range",
                  config_.uid_first, config_.uid_last, team));
}

std::optional<exec::Credentials> WorkerIdentities::for_reading(const std::string& team) const {
  if (!isolate_) return std::nullopt;
  if (auto c = configured(team)) return c;
  util::MutexLock lock(mu_);
  auto it = uids_.find(team);
  return auto_user(it != uids_.end() ? it->second : kNobody);
}

bool WorkerIdentities::is_worker_uid(uint32_t uid) const {
  if (!isolate_) return false;
  if (config_.user && config_.user->uid == uid) return true;
  for (const auto& [t, c] : config_.run_as)
    if (c.uid == uid) return true;
  if (!config_.user && uid >= config_.uid_first && uid <= config_.uid_last) return true;
  util::MutexLock lock(mu_);
  for (const auto& [t, u] : uids_)
    if (u == uid) return true;
  return false;
}

}  // namespace trainyard::server
