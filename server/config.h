// The server's configuration file (--config, YAML): the scheduling policy (same names as the
// simulator), the reconcile interval, retry backoff, the preemption notice signal, log caps,
// and the teams with their quotas (same shape as a cluster file's teams). See docs/server.md.
#pragma once

#include <string>
#include <vector>

#include "model/team.h"
#include "sched/policy_config.h"
#include "server/alerts_config.h"
#include "util/clock.h"
#include "util/status.h"

namespace trainyard::server {

// GPU telemetry: how often the sampler is read, how many raw samples per device stay in memory,
// and how long the per-minute rows stay in the store.
struct TelemetryConfig {
  util::Duration interval = std::chrono::seconds(1);
  int ring_samples = 3600;
  int retention_days = 30;
};

struct ServerConfig {
  sched::PolicyConfig policy;  // default fifo
  util::Duration reconcile_interval = std::chrono::milliseconds(500);
  util::Duration retry_backoff_initial = std::chrono::seconds(10);  // doubles per failure
  util::Duration retry_backoff_max = std::chrono::minutes(10);
  int notice_signal = 15;                     // SIGTERM
  int64_t log_cap_bytes = int64_t{64} << 20;  // per worker and attempt
  int64_t max_request_bytes = int64_t{1} << 20;
  std::vector<model::Team> teams;  // teams not listed are created on first use, unlimited
  TelemetryConfig telemetry;
  AlertsConfig alerts;  // rules, thresholds and webhook (docs/alerts.md)
  // The expected time between interruptions before any is observed: the prior of the MTBF that
  // jobs get as TRAINYARD_MTBF_SECONDS for their checkpoint interval (Young's rule).
  util::Duration mtbf_prior = std::chrono::hours(4);
};

util::Result<ServerConfig> parse_server_config(const std::string& text, const std::string& file);
util::Result<ServerConfig> load_server_config(const std::string& path);

// "SIGTERM", "TERM", "SIGUSR1", "15" -> signal number.
util::Result<int> parse_signal(const std::string& text);
std::string signal_name(int sig);

}  // namespace trainyard::server
