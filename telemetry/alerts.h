// GPU and job alerts: turns each round of GPU samples (with the jobs on each device) into alert
// transitions, firing once when a condition has held for its rule's duration and resolving when
// it has been clear for `resolve_after`. Every threshold is a field of AlertRules whose comment
// names its source; docs/alerts.md lists them with what to do about each alert.
// Pure: no clock, no I/O; time comes in as `now` (util::Time). Thread-compatible (callers
// serialize).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "telemetry/gpu_sample.h"
#include "util/clock.h"

namespace trainyard::telemetry {

// Stable rule ids (API, metrics label `rule`, job events).
inline constexpr const char* kRuleGpuTemperature = "gpu-temperature";
inline constexpr const char* kRuleGpuSlowdownTemperature = "gpu-slowdown-temperature";
inline constexpr const char* kRuleGpuThrottling = "gpu-throttling";
inline constexpr const char* kRuleGpuEccUncorrected = "gpu-ecc-uncorrected";
inline constexpr const char* kRuleGpuXid = "gpu-xid";
inline constexpr const char* kRuleJobMemoryLeak = "job-gpu-memory-leak";
inline constexpr const char* kRuleJobGpuIdle = "job-gpu-idle";
inline constexpr const char* kRuleTeamBudget = "team-budget";

inline constexpr const char* kSeverityWarning = "warning";
inline constexpr const char* kSeverityCritical = "critical";

// Every (rule, severity) pair the engine can produce, so that metrics can show zeros.
const std::vector<std::pair<std::string, std::string>>& alert_rule_severities();

// XIDs that NVIDIA's k8s-device-plugin (internal/rm/health.go) treats as application errors
// rather than device failures: 13 graphics engine exception, 31 GPU memory page fault, 43 GPU
// stopped processing, 45 preemptive cleanup, 68 video processor exception, 109 context switch
// timeout. Every other XID marks the device unhealthy.
bool is_application_xid(int xid);

struct AlertRules {
  // Every rule: `enabled`, `fire_after` (how long the condition must hold before it fires,
  // the config's `for`; 0 = at once) and `resolve_after` (how long it must be clear before it
  // resolves: hysteresis in time, so a value hovering at a threshold does not fire and resolve
  // every few seconds).
  struct Timing {
    bool enabled = true;
    util::Duration fire_after{0};
    util::Duration resolve_after = util::seconds(60);
  };
  // GPU temperature. 85 C for 5 minutes is the common PromQL rule (`DCGM_FI_DEV_GPU_TEMP > 85`
  // for 5m); Grafana dashboard 12239 colours 83 C and 87 C. Clearing needs the temperature
  // `hysteresis_c` below the threshold (ours). When the card reports its own slowdown
  // threshold (NVML), reaching it fires gpu-slowdown-temperature (critical) as well.
  struct Temperature : Timing {
    double threshold_c = 85;
    double hysteresis_c = 3;
    bool slowdown = true;
  };
  Temperature temperature{{.fire_after = util::seconds(5 * 60)}};
  // Clock slowdown from heat or power (kThrottleThermalOrPower: HW slowdown, SW/HW thermal, HW
  // power brake); idle, application-clock and power-cap reasons are benign. 5 minutes is ours,
  // matching the temperature rule.
  Timing throttling{.fire_after = util::seconds(5 * 60)};
  // Uncorrected (double-bit) volatile ECC errors increased: fires at once and stays firing until
  // no new error for `resolve_after` (5 minutes, like `increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL
  // [5m]) > 0`). The first reading of a device is the baseline.
  Timing ecc{.resolve_after = util::seconds(5 * 60)};
  // A new XID error: application XIDs (is_application_xid) warn, the others are critical
  // device errors. Held like ECC errors.
  Timing xid{.resolve_after = util::seconds(5 * 60)};
  // A job's GPU memory rising steadily over `window`: a positive least-squares slope whose
  // rise across the window is more than `min_rise_share` of the device's memory. SageMaker
  // Debugger's GPUMemoryIncrease uses windows of 10 and an increase of 5% (absolute). Fires as
  // soon as a full window shows it (fire_after is 0); clears below half the rise (ours).
  struct MemoryLeak : Timing {
    util::Duration window = util::seconds(10 * 60);
    double min_rise_share = 0.05;
  };
  MemoryLeak memory_leak;
  // A GPU held by a job with utilization below `util_percent` for `fire_after` (30 minutes; the
  // common rule is `GPU_UTIL < 20` for 1h while the pod runs; 5% is the idle level of
  // KempnerPulse's rule ladder). MIG devices report no utilization: SM activity is used there
  // when known, else the rule does not apply.
  struct Idle : Timing {
    double util_percent = 5;
  };
  Idle idle{{.fire_after = util::seconds(30 * 60)}};
  // A team's spending against its budget: warning at `warn_share`, critical at 100%. Fires at
  // once; resolves when the spending is below the level again (a new period, a raised budget).
  struct Budget : Timing {
    double warn_share = 0.80;
  };
  Budget budget{{.resolve_after = util::Duration(0)}};
};

struct AlertJob {
  int64_t id = 0;
  std::string name;
  std::string team;
  bool operator==(const AlertJob&) const = default;
};

// One device's reading in a round, with the jobs on it.
struct AlertObservation {
  GpuSample sample;
  std::vector<AlertJob> jobs;          // placed on the device or owning its processes
  std::map<int, int64_t> process_job;  // pid -> job, for processes that resolved to one
};

struct AlertSubject {
  std::string gpu_uuid;  // "" for a team alert
  int gpu_index = -1;
  std::string gpu_model;
  std::vector<AlertJob> jobs;  // the job the alert is about, or the jobs on the GPU when it fired
  std::string team;            // team alerts, and job alerts (the job's team)
};

struct Alert {
  int64_t id = 0;  // unique within the engine, increasing
  std::string rule;
  std::string severity;  // kSeverityWarning or kSeverityCritical
  AlertSubject subject;
  std::string summary;     // what was seen when it fired, with numbers and units
  std::string resolution;  // why it resolved; "" while firing
  util::Time started{};
  std::optional<util::Time> resolved;
  bool firing() const { return !resolved.has_value(); }
};

// A firing alert when `alert.firing()`, else a resolution.
struct AlertTransition {
  Alert alert;
};

class AlertEngine {
 public:
  explicit AlertEngine(AlertRules rules) : rules_(std::move(rules)) {}

  // One round: every device's newest reading. A subject absent from the round (the job left the
  // GPU, the device vanished) resolves at once. Returns the firings and resolutions, in order.
  std::vector<AlertTransition> evaluate(util::Time now, const std::vector<AlertObservation>& round);
  // Team spending (cost accounting feeds it). Non-finite or negative numbers and a budget <= 0
  // are ignored.
  std::vector<AlertTransition> evaluate_budget(util::Time now, const std::string& team,
                                               double spent, double budget);

  // Firing alerts, oldest first.
  std::vector<Alert> firing() const;
  const AlertRules& rules() const { return rules_; }

  // Where a condition stands in one round. Band: inside the hysteresis band (between the clear
  // and the fire threshold): a firing alert stays, a pending one starts over. Unknown: not
  // measured this round; nothing changes.
  enum class Level { Good, Band, Bad, Unknown };
  struct Verdict {
    Level level = Level::Unknown;
    std::string text;  // numbers behind the verdict, for the summary or resolution
  };

 private:
  // (rule, device uuid or team, job id, severity class) identifies one alert's subject.
  using Key = std::tuple<std::string, std::string, int64_t, std::string>;
  struct State {
    std::optional<util::Time> bad_since, good_since;
    std::optional<Alert> alert;  // set while firing
    util::Time seen{};           // last round that evaluated this key
  };
  struct DeviceMemory {
    std::optional<uint64_t> ecc;
    uint64_t xid_count = 0;
  };
  struct Point {
    util::Time t;
    double bytes;
  };

  void step(util::Time now, const Key& key, const AlertRules::Timing& timing,
            const std::string& severity, const AlertSubject& subject, const Verdict& v,
            std::vector<AlertTransition>& out);
  void evaluate_device(util::Time now, const AlertObservation& o,
                       std::vector<AlertTransition>& out);
  void evaluate_jobs(util::Time now, const AlertObservation& o, std::vector<AlertTransition>& out);
  Verdict leak_verdict(const Key& key, util::Time now, std::optional<double> bytes,
                       std::optional<uint64_t> total);
  void resolve_unseen(util::Time now, std::vector<AlertTransition>& out);

  AlertRules rules_;
  std::map<Key, State> states_;
  std::map<std::string, DeviceMemory> devices_;      // uuid -> counters seen last round
  std::map<Key, std::vector<Point>> memory_series_;  // leak rule: points inside the window
  int64_t next_id_ = 1;
};

}  // namespace trainyard::telemetry
