// Which Unix user runs each team's workers when the server is root (the `workers:` config), and
// the durable team -> uid map behind `workers: {user: auto}`: a team keeps its uid across
// restarts, because its checkpoints belong to that uid. The map is written (fsync'ed) before
// the first worker of a new team starts. Thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "exec/credentials.h"
#include "server/config.h"
#include "util/status.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

inline constexpr const char* kWorkerUidsFile = "worker-uids.json";
// Reads a job's files as this when its team never had a uid: a user that owns nothing.
inline constexpr uint32_t kNobody = 65534;

class WorkerIdentities {
 public:
  // `isolate` false (this process cannot switch users): every worker runs as the server's own
  // user and every answer below is nullopt. Loads `map_file` when it exists.
  static util::Result<std::unique_ptr<WorkerIdentities>> open(const WorkersConfig& config,
                                                              std::filesystem::path map_file,
                                                              bool isolate);
  bool isolating() const { return isolate_; }

  // Who runs the team's next worker; a team new to `user: auto` gets the lowest free uid of the
  // range (one no passwd or group entry uses), written to the map before this returns.
  util::Result<std::optional<exec::Credentials>> for_launch(const std::string& team)
      TY_EXCLUDES(mu_);
  // Whose permissions apply when the server reads the team's files; never allocates: a team
  // with no uid yet reads as kNobody.
  std::optional<exec::Credentials> for_reading(const std::string& team) const TY_EXCLUDES(mu_);
  // True for a uid that runs or may run workers (the range, the mapped uids, configured users).
  bool is_worker_uid(uint32_t uid) const TY_EXCLUDES(mu_);

 private:
  WorkerIdentities(const WorkersConfig& config, std::filesystem::path map_file, bool isolate)
      : config_(config), map_file_(std::move(map_file)), isolate_(isolate) {}
  util::Status load() TY_EXCLUDES(mu_);
  util::Status save() const TY_REQUIRES(mu_);
  std::optional<exec::Credentials> configured(const std::string& team) const;
  static exec::Credentials auto_user(uint32_t uid);

  const WorkersConfig config_;
  const std::filesystem::path map_file_;
  const bool isolate_;
  mutable util::Mutex mu_;
  std::map<std::string, uint32_t> uids_ TY_GUARDED_BY(mu_);  // team -> uid of `user: auto`
};

}  // namespace trainyard::server
