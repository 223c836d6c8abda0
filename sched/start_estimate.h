// When each job a plan left waiting is expected to start, as Slurm's `squeue --start` says.
// The backfill reservation, where the policy made one, is the scheduler's own promise. For the
// other jobs the plan is played forward with no new arrivals: at each time a running job is
// expected to end (start + runtime limit, or the simulator's known remaining time) it leaves and
// plan() runs again with the same policy, quotas and order; preempted jobs leave at once. A job
// that no replay starts gets no time, and the reason says what leaves it unbounded.
// Pure: reads the snapshot and the plan, runs plan() on local copies. Thread-compatible.
// Assumes: runtime limits are upper bounds (the server stops jobs at them); grace periods of
// preemptions are not counted; dependencies count as unfinished until the replay's end.
#pragma once

#include <string>
#include <vector>

#include "sched/plan.h"
#include "sched/policy_config.h"
#include "sched/snapshot.h"

namespace trainyard::sched {

enum class EstimateBasis {
  Reservation,  // the backfill reservation's shadow time
  Replay,       // the plan played forward over running jobs' expected ends
  Unknown,      // nothing bounds it; `why` says what
};

struct StartEstimate {
  JobId job;
  EstimateBasis basis = EstimateBasis::Unknown;
  Time at = Time::max();  // Time::max() when Unknown
  std::string why;        // how it was found, or why there is no time
};

struct EstimateOptions {
  int max_replans = 32;  // plan() runs at most this many times; later starts stay Unknown
  uint64_t seed = 0;
};

// One estimate per entry of plan.waiting, in that order. `plan` must be plan(snap, cfg, ...).
std::vector<StartEstimate> estimate_starts(const Snapshot& snap, const Plan& plan,
                                           const PolicyConfig& cfg,
                                           const EstimateOptions& opts = {});

std::string_view estimate_basis_name(EstimateBasis b);  // "reservation", "replay", "unknown"

}  // namespace trainyard::sched
