// Trace-driven discrete-event simulation of one policy on one cluster: jobs arrive, the very
// same sched::plan() decides, and the simulator applies its starts and preemptions on a
// virtual clock. A preempted job gets a notice, runs on for the grace period, then loses the
// work since its last periodic checkpoint and pays a restart delay when it starts again.
// No globals: several simulations may run in one process. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cloud/cost_ledger.h"
#include "model/cluster_config.h"
#include "sched/policy_config.h"
#include "sim/workload.h"
#include "util/clock.h"
#include "util/status.h"

namespace trainyard::sim {

struct CloudScenario;  // sim/fleet.h

using model::ClusterConfig;
using model::load_cluster_yaml;
using model::parse_cluster_yaml;

struct SimOptions {
  sched::PolicyConfig policy;
  uint64_t seed = 1;
  util::Duration restart_delay = util::seconds(60);
  util::Duration grace_period = util::seconds(30);
  // A job saves a checkpoint when its preemption notice comes (trainyard's SDK does), so a stop
  // after a notice loses no work; only a stop without notice (a reclaim with no time left)
  // falls back to the last periodic checkpoint. Off: every stop loses the work since then.
  bool save_on_notice = false;
  // Run sched::check_plan() after every plan() (slow on large traces; tests turn it on). The
  // cheap checks — no GPU given twice, gangs whole, capacity — always run as jobs start.
  bool full_invariant_check = false;
  // Keep Snapshot::arrival_order so plan() ranks long queues in linear time. Off only to
  // measure what the hint saves (bench/sim_throughput).
  bool keep_arrival_order = true;
  // Called about every `progress_every` events with (jobs finished, jobs total, virtual now).
  std::function<void(int64_t, int64_t, util::Time)> progress;
  int64_t progress_every = 200000;
  // Buy the cluster from a simulated cloud instead (sim/fleet.h): the cluster's own nodes are
  // ignored, its teams kept. The run stops `cloud_horizon` after the last arrival even if jobs
  // are left (restart-from-scratch on spot may never finish a long job).
  std::shared_ptr<const CloudScenario> cloud;
  util::Duration cloud_horizon = util::seconds(60 * 86400);
  // Watchdog. A run where no job finishes or saves a checkpoint for `stall_limit` of simulated
  // time after the last arrival (0: twice the longest job plus a day), or where the clock does
  // not move for `same_time_limit` scheduling rounds, ends with an error naming the jobs that
  // were going round in circles, instead of running forever.
  util::Duration stall_limit{0};
  int64_t same_time_limit = 100000;
};

struct JobOutcome {
  util::JobId id;
  int team = -1;  // index into SimResult::teams
  int priority = 0;
  int64_t gpu_milli = 0;  // total GPU share of the job
  util::Time submit{};
  util::Time first_start{};
  util::Time finish{};
  util::Duration duration{0};  // work it needed
  int preemptions = 0;
  util::Duration lost_work{0};  // useful work thrown away by preemptions (wall time)
  util::Duration restart_overhead{0};
  int interruptions = 0;  // of its preemptions, those because the cloud reclaimed a node
  util::Duration interruption_lost_work{0};  // of lost_work, what those reclaims threw away
  util::Duration interruption_restart{0};    // of restart_overhead, the restarts after them
};

// The cluster state after each batch of same-time events.
struct TimelinePoint {
  util::Time time;
  int64_t allocated_milli;  // GPU share held by running and preempting jobs
  int32_t pending;
  int32_t running;
  int32_t nodes = 0;       // cloud runs: nodes up
  int32_t fleet_gpus = 0;  // cloud runs: GPUs up
  double cost_usd = 0;     // cloud runs: money spent so far
};

struct SimResult {
  std::string policy;
  std::vector<std::string> teams;
  std::vector<double> team_weights;  // fair-share weights, per team
  int64_t capacity_milli = 0;
  std::vector<JobOutcome> jobs;
  std::vector<TimelinePoint> timeline;
  int64_t events = 0;
  int64_t plan_calls = 0;
  // Jobs left when the run ended: without a cloud, jobs that can never run on this cluster;
  // in cloud runs also those the horizon cut short. unfinished_by_reason says why, per job.
  int64_t unfinished = 0;
  // Per reason, the unfinished jobs (the counts sum to `unfinished`): "running" (still running
  // or stopping when the run ended), the sched::WaitCode name of a pending job's last wait
  // reason ("NeverFits": no node of any pool could hold a worker; "AwaitingNodes", ...), or
  // "pending" for a job no plan() gave a reason yet.
  std::map<std::string, int64_t> unfinished_by_reason;
  double allocated_gpu_seconds = 0;
  double wall_seconds = 0;
  // Cloud runs: the showback (per job, team and pool, idle and lost work) and the bill, and
  // whether the accounting balanced to the unit (check_balanced).
  std::optional<cloud::CostReport> cost;
  int64_t interruptions = 0;  // node reclaims (a reclaimed node may hold no job, or several)
  // Over every job, finished or not: stops caused by reclaims (one per job per stop), the
  // wall time of work they threw away, and the restart delays paid after them.
  int64_t interrupted_stops = 0;
  util::Duration interruption_lost_work{0};
  util::Duration interruption_restart{0};
  double billed_gpu_hours = 0;
  int32_t peak_nodes = 0;
  // Cloud runs: the run reached SimOptions::cloud_horizon with jobs left. When false and jobs
  // are left, nothing could happen any more (no event was due): unfinished_by_reason says why.
  bool stopped_at_horizon = false;
};

// Fails only on an unknown policy or a broken invariant (a bug: the message says which).
util::Result<SimResult> simulate(const Workload& workload, const ClusterConfig& cluster,
                                 const SimOptions& opts);

}  // namespace trainyard::sim
