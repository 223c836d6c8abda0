// The security checks of `trainyard server --check`, also run (in part) at every start: whether
// workers can be isolated from the server and from each other on this machine, the modes of the
// state directory and its secrets, and how the API is exposed. Each finding says what it means
// and how to fix it (docs/server.md, "Security model").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "exec/credentials.h"
#include "server/config.h"
#include "server/server_main.h"
#include "util/status.h"

namespace trainyard::server {

enum class Severity { Ok, Info, Warn, High };

struct Finding {
  Severity severity = Severity::Ok;
  std::string what;
  std::string fix;  // empty for Ok
};

// Every finding for these options and config, without starting anything.
std::vector<Finding> check_security(const ServerOptions& options, const ServerConfig& config,
                                    const std::filesystem::path& state_dir);
// "HIGH  what\n      fix: ...\n".
std::string format_finding(const Finding& f);

// In a forked child, takes on `creds` as a worker would (groups, gid, uid, no-new-privs), checks
// that root cannot be regained and that `reach` (the state dir's jobs/, or before the server has
// set the state dir's modes, the directory above it) can be passed through. The reason and the
// fix when any step fails. Forks: call it before the server answers requests.
util::Status try_worker_identity(const exec::Credentials& creds,
                                 const std::filesystem::path& reach);
// The identity try_worker_identity() tests for `workers`: the configured user, else the first
// uid of the range.
exec::Credentials sample_worker_identity(const WorkersConfig& workers);

// `trainyard server --check`: prints every finding; 1 when one is High, 2 for a bad config, else 0.
int run_server_check(const ServerOptions& options);

}  // namespace trainyard::server
