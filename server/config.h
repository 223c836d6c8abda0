// The server's configuration file (--config, YAML): the scheduling policy (same names as the
// simulator), the reconcile interval, retry backoff, the preemption notice signal, log caps,
// and the teams with their quotas (same shape as a cluster file's teams). See docs/server.md.
#pragma once

#include <string>
#include <vector>

#include "model/team.h"
#include "sched/policy_config.h"
#include "util/clock.h"
#include "util/status.h"

namespace trainyard::server {

struct ServerConfig {
  sched::PolicyConfig policy;  // default fifo
  util::Duration reconcile_interval = std::chrono::milliseconds(500);
  util::Duration retry_backoff_initial = std::chrono::seconds(10);  // doubles per failure
  util::Duration retry_backoff_max = std::chrono::minutes(10);
  int notice_signal = 15;                     // SIGTERM
  int64_t log_cap_bytes = int64_t{64} << 20;  // per worker and attempt
  int64_t max_request_bytes = int64_t{1} << 20;
  std::vector<model::Team> teams;  // teams not listed are created on first use, unlimited
};

util::Result<ServerConfig> parse_server_config(const std::string& text, const std::string& file);
util::Result<ServerConfig> load_server_config(const std::string& path);

// "SIGTERM", "TERM", "SIGUSR1", "15" -> signal number.
util::Result<int> parse_signal(const std::string& text);
std::string signal_name(int sig);

}  // namespace trainyard::server
