#include "server/server_check.h"

#include <grp.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "server/http_api.h"
#include "server/state_dir.h"

namespace trainyard::server {
namespace {

namespace fs = std::filesystem;

// Exit codes of the child in try_worker_identity(): which step failed.
enum ChildStep { kGroups = 10, kGid, kUid, kNoNewPrivs, kStillRoot, kStateDir };

std::string user_name(uid_t uid) {
  const passwd* pw = ::getpwuid(uid);
  return pw != nullptr ? pw->pw_name : std::to_string(uid);
}

std::string mode_text(mode_t mode) {
  return fmt::format("{:04o}", mode & 07777);
}

// A file that only its owner may read: anything for group or others is High.
void check_private_file(const fs::path& path, std::vector<Finding>& out) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  if ((st.st_mode & 077) != 0) {
    out.push_back(
        {Severity::High,
         fmt::format("{} is mode {}: users other than its owner can read it", path.string(),
                     mode_text(st.st_mode)),
         fmt::format("chmod 600 {} (the server also does this at start)", path.string())});
  } else {
    out.push_back(
        {Severity::Ok, fmt::format("{} is mode {}", path.string(), mode_text(st.st_mode)), ""});
  }
}

void check_state_dir(const fs::path& dir, bool isolate, std::vector<Finding>& out) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    out.push_back({Severity::Info,
                   fmt::format("state directory {} does not exist yet; the server creates it "
                               "with mode {}",
                               dir.string(), isolate ? "0711" : "0700"),
                   ""});
    return;
  }
  const mode_t want = isolate ? 0711 : 0700;
  if ((st.st_mode & 022) != 0) {
    out.push_back(
        {Severity::High,
         fmt::format("state directory {} is mode {}: others can create and replace "
                     "files in it",
                     dir.string(), mode_text(st.st_mode)),
         fmt::format("chmod {:o} {} (the server sets this at start)", want, dir.string())});
  } else if ((st.st_mode & 07777) != want) {
    out.push_back(
        {Severity::Warn,
         fmt::format("state directory {} is mode {}, not {:04o}", dir.string(),
                     mode_text(st.st_mode), want),
         fmt::format("chmod {:o} {} (the server sets this at start)", want, dir.string())});
  } else {
    out.push_back(
        {Severity::Ok,
         fmt::format("state directory {} is mode {}", dir.string(), mode_text(st.st_mode)), ""});
  }
  for (const char* name : {"admin.token", "state.db", "state.db-wal", "state.db-shm"})
    check_private_file(dir / name, out);
}

// The wrapper runs as root: whoever can change the binary, or a directory above it, can run
// code as root.
void check_binary(const std::string& binary, std::vector<Finding>& out) {
  if (binary.empty()) return;
  for (fs::path p = binary; !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) break;
    const bool sticky_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0;
    if (st.st_uid != 0 || ((st.st_mode & 022) != 0 && !sticky_dir)) {
      out.push_back({Severity::High,
                     fmt::format("{} (owner {}, mode {}) can be changed by users other than root, "
                                 "and the worker wrapper it holds runs as root",
                                 p.string(), user_name(st.st_uid), mode_text(st.st_mode)),
                     fmt::format("chown root {} && chmod go-w {}; or install trainyard where only "
                                 "root can write (e.g. /usr/local/bin)",
                                 p.string(), p.string())});
      return;
    }
    if (p == p.root_path()) break;
  }
  out.push_back({Severity::Ok, fmt::format("{} can be changed by root only", binary), ""});
}

void check_workers(const ServerOptions& options, const ServerConfig& config,
                   const fs::path& state_dir, std::vector<Finding>& out) {
  const uid_t self = ::geteuid();
  if (self != 0) {
    out.push_back(
        {Severity::High,
         fmt::format("the server runs as uid {} ({}), not root, so every job runs as that user "
                     "too: a job can read the state directory (admin.token, state.db), every "
                     "team's logs and checkpoints, and signal other jobs' processes",
                     self, user_name(self)),
         "run `trainyard server` as root: each team's workers then run as a user of their own "
         "(the workers: section of the config); or give each team a server of its own"});
    return;
  }
  const exec::Credentials sample = sample_worker_identity(config.workers);
  // The server sets the state dir's own mode at start; what lies above it is the admin's.
  const fs::path above = fs::absolute(state_dir).lexically_normal().parent_path();
  if (util::Status st = try_worker_identity(sample, above); !st.is_ok()) {
    out.push_back({Severity::High, "workers cannot be isolated: " + st.message(),
                   "see the fix above; until then every job would fail to start"});
  } else if (config.workers.user) {
    out.push_back(
        {Severity::Ok, fmt::format("workers run as {} (uid {})", sample.user, sample.uid), ""});
  } else {
    out.push_back({Severity::Ok,
                   fmt::format("workers run as a user of their team's own (uids {}-{}; uid {} "
                               "tested)",
                               config.workers.uid_first, config.workers.uid_last, sample.uid),
                   ""});
  }
  if (config.workers.user && config.workers.user->uid != 0) {
    out.push_back({Severity::Warn,
                   fmt::format("every team's workers run as {}: teams can read each other's "
                               "checkpoints and logs and signal each other's processes",
                               config.workers.user->user),
                   "workers: {user: auto} gives each team a user of its own"});
  }
  std::vector<std::string> as_root;
  if (config.workers.user && config.workers.user->uid == 0) as_root.push_back("every team");
  for (const auto& [team, c] : config.workers.run_as)
    if (c.uid == 0) as_root.push_back("team " + team);
  if (!as_root.empty()) {
    out.push_back({Severity::High,
                   fmt::format("workers of {} run as root: they can read and change everything "
                               "on this machine",
                               fmt::join(as_root, ", ")),
                   "give them an unprivileged user (workers.user, workers.runAs)"});
  }
  check_binary(options.wrapper_path, out);
}

void check_api(const ServerOptions& options, std::vector<Finding>& out) {
  const size_t colon = options.listen.rfind(':');
  std::string host = colon == std::string::npos ? options.listen : options.listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (!is_loopback_host(host)) {
    out.push_back({Severity::High,
                   fmt::format("the API listens on {} in plain HTTP: tokens and job specs cross "
                               "the network unencrypted",
                               options.listen),
                   "listen on 127.0.0.1 and put a TLS reverse proxy (nginx, Caddy) in front of it "
                   "(docs/server.md, Security model)"});
    return;
  }
  if (options.require_auth) {
    out.push_back({Severity::Ok, "every request needs a token (--require-auth)", ""});
    return;
  }
  out.push_back(
      {Severity::Warn,
       ::geteuid() == 0
           ? fmt::format("on {} without --require-auth a request without a token acts as admin: "
                         "every local user can manage every job and create tokens (jobs cannot: "
                         "requests from worker users need a token)",
                         options.listen)
           : fmt::format("on {} without --require-auth a request without a token acts as admin: "
                         "every local user, and every job (they run as this user), can manage "
                         "every job and create tokens",
                         options.listen),
       "add --require-auth and give users tokens (`trainyard token create`); the admin's is in "
       "admin.token"});
}

const char* severity_text(Severity s) {
  switch (s) {
    case Severity::Ok:
      return "ok";
    case Severity::Info:
      return "info";
    case Severity::Warn:
      return "WARN";
    case Severity::High:
      return "HIGH";
  }
  return "?";
}

}  // namespace

exec::Credentials sample_worker_identity(const WorkersConfig& workers) {
  if (workers.user) return *workers.user;
  return exec::Credentials{.uid = workers.uid_first,
                           .gid = workers.uid_first,
                           .groups = {},
                           .user = std::to_string(workers.uid_first),
                           .home = ""};
}

util::Status try_worker_identity(const exec::Credentials& creds, const fs::path& reach_path) {
  std::vector<gid_t> groups = {creds.gid};
  groups.insert(groups.end(), creds.groups.begin(), creds.groups.end());
  fs::path reach = fs::absolute(reach_path).lexically_normal();
  std::error_code ec;
  while (!fs::exists(reach, ec) && reach.has_relative_path()) reach = reach.parent_path();
  const std::string dir = reach.string();
  const pid_t pid = ::fork();
  if (pid < 0) return util::unavailable("fork failed");
  if (pid == 0) {
    if (::setgroups(groups.size(), groups.data()) != 0) ::_exit(kGroups);
    if (::setgid(creds.gid) != 0) ::_exit(kGid);
    if (::setuid(creds.uid) != 0) ::_exit(kUid);
    if (creds.uid == 0) ::_exit(0);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(kNoNewPrivs);
    if (::setuid(0) == 0) ::_exit(kStillRoot);
    if (::access(dir.c_str(), X_OK) != 0) ::_exit(kStateDir);
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int step = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const std::string who = fmt::format("uid {} gid {}", creds.uid, creds.gid);
  switch (step) {
    case 0:
      return util::Status::ok();
    case kGroups:
    case kGid:
    case kUid:
      return util::failed_precondition(fmt::format(
          "this root cannot become {} (in a user namespace, only the ids of /proc/self/uid_map "
          "and gid_map exist); set workers.uidRange to ids this machine maps, or workers.user "
          "to an existing user",
          who));
    case kNoNewPrivs:
      return util::failed_precondition("prctl(PR_SET_NO_NEW_PRIVS) failed; the kernel is too old");
    case kStillRoot:
      return util::failed_precondition(
          fmt::format("after becoming {} the process could become root again", who));
    case kStateDir: {
      const fs::path closed = first_closed_dir(reach);
      return util::failed_precondition(fmt::format(
          "{} cannot pass through {}{}, so workers could not reach their run dirs in the state "
          "directory: chmod o+x {}, or give --state a file in a directory others can pass through "
          "(such as /var/lib/trainyard/state.db)",
          who, dir, closed.empty() ? "" : fmt::format(" ({} is closed to others)", closed.string()),
          closed.empty() ? dir : closed.string()));
    }
    default:
      return util::internal_error(fmt::format("the test of {} ended abnormally", who));
  }
}

std::vector<Finding> check_security(const ServerOptions& options, const ServerConfig& config,
                                    const fs::path& state_dir) {
  std::vector<Finding> out;
  check_workers(options, config, state_dir, out);
  check_state_dir(state_dir, ::geteuid() == 0, out);
  check_api(options, out);
  out.push_back({Severity::Info,
                 "jobs still share /tmp, /dev/shm and loopback ports, and see every process's "
                 "command line in /proc; each worker gets a private TMPDIR",
                 ""});
  return out;
}

std::string format_finding(const Finding& f) {
  std::string text = fmt::format("{:<5} {}\n", severity_text(f.severity), f.what);
  if (!f.fix.empty()) text += fmt::format("      fix: {}\n", f.fix);
  return text;
}

int run_server_check(const ServerOptions& options) {
  ServerConfig config;
  if (!options.config.empty()) {
    auto loaded = load_server_config(options.config);
    if (!loaded.is_ok()) {
      std::fprintf(stderr, "trainyard server --check: %s\n", loaded.status().message().c_str());
      return 2;
    }
    config = std::move(*loaded);
  }
  const fs::path db = options.state.empty() ? default_state_path() : options.state;
  const fs::path state_dir = db.parent_path().empty() ? fs::path(".") : db.parent_path();
  bool high = false;
  for (const auto& f : check_security(options, config, state_dir)) {
    std::fputs(format_finding(f).c_str(), stdout);
    high = high || f.severity == Severity::High;
  }
  std::printf("%s\n", high ? "high-severity findings: fix them before giving this server to users"
                           : "no high-severity findings");
  return high ? 1 : 0;
}

}  // namespace trainyard::server
