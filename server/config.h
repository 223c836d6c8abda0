// The server's configuration file (--config, YAML): the scheduling policy (same names as the
// simulator), the reconcile interval, retry backoff, the preemption notice signal, log caps,
// and the teams with their quotas (same shape as a cluster file's teams). See docs/server.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exec/credentials.h"
#include "exec/slurm_executor.h"
#include "model/node.h"
#include "model/team.h"
#include "sched/policy_config.h"
#include "server/alerts_config.h"
#include "util/clock.h"
#include "util/status.h"

namespace trainyard::model {
class YamlReader;
struct YamlField;
}  // namespace trainyard::model

namespace trainyard::server {

// GPU telemetry: how often the sampler is read, how many raw samples per device stay in memory,
// and how long the per-minute rows stay in the store.
struct TelemetryConfig {
  util::Duration interval = std::chrono::seconds(1);
  int ring_samples = 3600;
  int retention_days = 30;
};

// Where nodes come from (the `capacity:` section, docs/server.md). `static`: only this machine's
// GPUs (--gpus). `simcloud`: also the cloud pools below, bought from the simulated cloud and run
// on this machine as synthetic GPUs, so the whole capacity loop runs without a cloud account.
enum class CapacityProvider { Static, SimCloud };

inline constexpr std::string_view kDefaultThroughputs =
    "../shared/traces/gavel/simulation_throughputs.json";

struct CapacityConfig {
  CapacityProvider provider = CapacityProvider::Static;
  std::string catalog = "../shared/catalog";  // SkyPilot-format price CSVs (+ Spot Advisor)
  uint64_t seed = 1;
  // Exact spot interruptions per node-hour for every simcloud spot node; nullopt = the Spot
  // Advisor bucket of the offering (docs/cloud.md).
  std::optional<double> interruption_rate_per_hour;
  // Request -> ready. simcloud's realistic 90 s makes a live demo slow; 5 s keeps it quick.
  util::Duration provisioning_delay = std::chrono::seconds(5);
  std::optional<util::Duration> notice;  // overrides each provider's interruption notice lead
  // After a reclaim in a zone, the pool buys elsewhere for this long.
  util::Duration zone_backoff = std::chrono::minutes(10);
  // After a spot request failed for want of capacity, no request in that zone for this long.
  util::Duration spot_unavailable_backoff = std::chrono::minutes(5);
  // Gavel's simulation_throughputs.json: the autoscaler ranks pools by price per unit of work,
  // as the simulator does. nullopt: kDefaultThroughputs when that file exists; "": by price.
  std::optional<std::string> throughputs;
  // A spot trace (the formats of `trainyard simulate --spot-trace`) replayed for every spot
  // offering from the server's start, instead of the seeded rate; empty: none.
  std::string spot_trace;
  std::vector<model::Pool> pools;  // cloud pools (autoscaled); resolved against the catalog
};

// Who runs the workers when the server is root (the `workers:` section, docs/server.md). By
// default (`user: auto`) each team gets a uid (and a gid of the same number) of its own from
// uid_first..uid_last, kept in the state directory; no passwd entry is needed.
struct WorkersConfig {
  std::optional<exec::Credentials> user;  // every team runs as this user; nullopt = auto
  uint32_t uid_first = 1900000;
  uint32_t uid_last = 1965535;
  std::map<std::string, exec::Credentials> run_as;  // per-team users, over both of the above
};

// Who runs the processes (the `executor:` section, docs/slurm.md). `local`: this machine, the
// embedded default. `slurm`: a Slurm cluster's nodes; trainyard decides, Slurm runs.
enum class ExecutorKind { Local, Slurm };

struct ExecutorConfig {
  ExecutorKind kind = ExecutorKind::Local;
  // For kind slurm (wrapper_path and instance are filled in by the server at start).
  exec::SlurmOptions slurm;
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
  CapacityConfig capacity;
  WorkersConfig workers;
  ExecutorConfig executor;
};

// Errors read "<file>:<line>:<column>: <key path> must be <what>, got <value> (<fix>)"
// (model/yaml_reader.h); unknown keys get a "did you mean" hint.
util::Result<ServerConfig> parse_server_config(const std::string& text, const std::string& file);
util::Result<ServerConfig> load_server_config(const std::string& path);
// The sections below take the reader of the config file and the section's field (`capacity`,
// `workers`, `executor`), so their errors carry the file, line, column and key path.
// The `capacity:` section (capacity_config.cc); spotFallbackWait goes to out.policy.autoscale.
util::Status parse_capacity_config(const model::YamlReader& r, const model::YamlField& section,
                                   ServerConfig& out);
// The `workers:` section (workers_config.cc). User names are looked up now (getpwnam): one that
// does not exist is an error with file:line:column.
util::Status parse_workers_config(const model::YamlReader& r, const model::YamlField& section,
                                  ServerConfig& out);
// A user name or a numeric uid as a worker identity: a name's passwd uid, gid, groups and home;
// a uid with no passwd entry gets the gid of the same number, no groups and no home.
util::Result<exec::Credentials> resolve_worker_user(const std::string& name_or_uid);
// The `executor:` section (executor_config.cc).
util::Status parse_executor_config(const model::YamlReader& r, const model::YamlField& section,
                                   ServerConfig& out);
// "static" or "simcloud" (also what --provider takes).
util::Result<CapacityProvider> parse_capacity_provider(const std::string& text);

// "SIGTERM", "TERM", "SIGUSR1", "15" -> signal number.
util::Result<int> parse_signal(const std::string& text);
std::string signal_name(int sig);

}  // namespace trainyard::server
