// The scheduler's input: an immutable view of the cluster and the queues at time `now`.
// Drivers (simulator, server) own a Snapshot and update it between plan() calls; plan()
// only reads it. Nodes, teams and GPU models are referred to by index for speed; ids are
// kept for output and as the tie-breaker of last resort.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "model/accelerator.h"
#include "model/job.h"
#include "model/labels.h"
#include "model/node.h"
#include "model/quantity.h"
#include "model/scaling.h"
#include "util/clock.h"
#include "util/ids.h"

namespace trainyard::sched {

using util::Duration;
using util::JobId;
using util::Time;

inline constexpr Duration kUnknownDuration = Duration::max();

// One GPU (or MIG instance, or fraction) of one worker, or a CPU-only worker (gpu_idx -1).
struct Assignment {
  int32_t worker = 0;
  int32_t node_idx = 0;
  int16_t gpu_idx = -1;
  int16_t milli = 0;        // milli-GPUs taken on that GPU (1000 = whole); 0 for MIG
  int8_t mig_profile = -1;  // index into the node accelerator's MIG profiles
  int8_t mig_start = -1;    // first memory slice of the MIG instance
  bool operator==(const Assignment&) const = default;
};

// Workers a placement holds (its highest worker index + 1); 0 for an empty placement. An
// elastic job's attempt runs with this many workers, which may differ from its spec's.
inline int placement_workers(const std::vector<Assignment>& placement) {
  int n = 0;
  for (const Assignment& a : placement) n = std::max(n, a.worker + 1);
  return n;
}

struct SnapshotNode {
  util::NodeId id;
  std::string name;
  int gpu_model = -1;  // index into Snapshot::gpu_models; -1 for a node without GPUs
  int gpu_count = 0;
  bool mig_enabled = false;
  bool schedulable = true;  // ready and not draining
  model::CpuMilli cpu{0};
  model::Bytes memory{0};
  int rack = -1;  // index into Snapshot::racks; -1 = no topology domain
  model::Labels labels;
  int pool = -1;      // index into Snapshot::pools; -1 = not in a pool the autoscaler manages
  bool spot = false;  // reclaimable: a non-preemptible job is never placed here
  // When the node last became free of every job (or came up empty); Time::max() while any job
  // holds it. The autoscaler releases nodes idle for longer than their pool's idle timeout.
  Time idle_since = Time::max();
  // Capacity in use by work the scheduler does not manage (jobs a batch system such as Slurm
  // runs for others on a shared node): bit g set = GPU g is busy; and CPU and memory held so.
  // Nothing is ever placed there, and no preemption frees it.
  uint32_t gpus_held_outside = 0;
  model::CpuMilli cpu_held_outside{0};
  model::Bytes memory_held_outside{0};
};

// A zone a pool may buy in; after a reclaim there it is avoided until `blocked_until`.
struct SnapshotZone {
  std::string name;
  Time blocked_until{};
};

// A pool of alike nodes bought the same way. Autoscaled pools grow and shrink between
// min_nodes and max_nodes; others are fixed (static, reserved) and only show in accounting.
struct SnapshotPool {
  std::string name;
  model::PoolKind kind = model::PoolKind::Static;
  bool autoscaled = false;
  int gpu_model = -1;  // index into Snapshot::gpu_models
  int gpus_per_node = 0;
  bool mig_enabled = false;
  model::CpuMilli cpu{0};
  model::Bytes memory{0};
  model::Labels labels;
  int min_nodes = 0;
  int max_nodes = 0;
  int priority = 0;                  // higher is tried first among pools that fit
  double price_per_node_hour = 0;    // USD; orders pools of equal priority, checks budgets
  double relative_throughput = 1.0;  // work per GPU-hour vs a V100: ranks by cost per work
  Duration idle_timeout{0};          // 0 = idle nodes are never released
  int ready = 0;                     // nodes up (schedulable or not) — maintained by the driver
  int provisioning = 0;              // nodes requested and not up yet
  // After a spot request failed for want of capacity: no spot request before this time.
  Time unavailable_until{};
  std::vector<SnapshotZone> zones;  // in preference order; empty = the provider chooses
};

enum class JobPhase { Pending, Running, Preempting };

// An elastic job's measured pace at one size: steps per second with `workers` workers, from
// the step metrics it reported (the server reads them; the simulator models speed instead).
struct MeasuredSpeed {
  int workers = 0;
  double steps_per_second = 0;
};

struct SnapshotJob {
  JobId id;
  int team = -1;  // index into Snapshot::teams
  int priority = 0;
  bool preemptible = true;
  JobPhase phase = JobPhase::Pending;
  int workers = 1;      // of the current attempt while running; the requested count while pending
  int min_workers = 0;  // elastic range (model::JobSpec); 0 = rigid
  int max_workers = 0;
  model::WorkerRequest worker;
  // How the job's speed depends on GPU type, count, placement and batch size, when known
  // (model/scaling.h); owned by the driver, which keeps it alive as long as the snapshot.
  // nullptr: speed is proportional to GPUs for elastic jobs, fixed for rigid ones.
  const model::ScalingModel* scaling = nullptr;
  // Without a model: the pace it was measured at, per worker count seen (ascending workers).
  std::vector<MeasuredSpeed> measured;
  uint64_t gpu_model_mask = 0;  // allowed models (bits over gpu_models); 0 = any
  model::Labels node_selector;
  Time submitted{};
  Time queued_since{};            // entered Pending last (submission or requeue)
  Time started{};                 // start of the current attempt (Running/Preempting)
  Duration attained_gpu_time{0};  // GPU-time received so far, all attempts, up to `now`
  Duration last_run{0};           // length of the most recent attempt that ended
  Duration runtime_limit{0};      // user's limit/estimate for one attempt; 0 = none
  // Remaining run time: the simulator's oracle; the server's estimate from the job's time limit
  // (runtime_limit less the attempt's run time); unknown otherwise.
  Duration remaining = kUnknownDuration;
  // What a preemption would lose: work since the newest checkpoint of the current attempt.
  // Periodic checkpoints every `checkpoint_interval` of run time (the spec's, or the
  // simulator's model), and/or the commit time of the newest checkpoint seen on disk (the server
  // reads it from the job's checkpoint directory). Neither: all run time of the attempt is lost.
  Duration checkpoint_interval{0};
  Time last_checkpoint{};
  JobId waiting_on = util::kNoJob;    // an unfinished dependency, if any
  std::vector<Assignment> placement;  // where it runs (Running/Preempting)

  bool is_running() const { return phase != JobPhase::Pending; }
  bool elastic() const { return max_workers > 0; }
  // Run time of the current attempt that a preemption at `now` would throw away.
  Duration work_at_risk(Time now) const;
  model::GpuMilli gpu_share() const { return worker.gpu_share() * workers; }
};

// Per GPU model (index) or for all models (the last entry). nominal < 0 means no quota.
struct QuotaEntry {
  int64_t nominal_milli = -1;
  int64_t borrowing_limit_milli = -1;  // < 0: unlimited
};

struct SnapshotTeam {
  std::string name;
  double weight = 1.0;
  int cohort = -1;                // index into Snapshot::cohorts; -1 = borrows from no one
  std::vector<QuotaEntry> quota;  // size gpu_models.size() + 1, or empty (unlimited)
  // USD the team may still spend in its current budget period; infinity = no budget. At or
  // below 0 its pending jobs wait (BudgetExhausted) and the autoscaler buys nothing for it.
  double budget_left = std::numeric_limits<double>::infinity();
  // The team's past GPU usage, decayed with FairConfig::usage_half_life, as a share of the
  // cluster's (sched/decayed_usage.h); 0 when decay is off. The fair policy adds it, divided
  // by the weight, to the team's current dominant share.
  double past_usage_share = 0;
};

struct Snapshot {
  Time now{};
  std::vector<std::string> gpu_models;
  std::vector<const model::Accelerator*> accelerators;  // per gpu_model; nullptr if unknown
  std::vector<std::string> racks;
  std::vector<std::string> cohorts;
  std::vector<SnapshotNode> nodes;
  std::vector<SnapshotTeam> teams;
  std::vector<SnapshotPool> pools;  // empty: a fixed cluster, no autoscaling
  std::vector<SnapshotJob> jobs;    // pending, running and preempting; finished jobs are dropped
  // Optional hint: every index of `jobs`, ordered by (submitted, id). Drivers that keep it let
  // plan() rank a long queue in linear time; plan() checks it as it reads and sorts instead
  // when it is missing or wrong, so a stale hint costs time, never correctness.
  std::vector<int32_t> arrival_order;
};

}  // namespace trainyard::sched
