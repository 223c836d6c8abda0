// Queue order: ranks jobs for a policy. Rank 0 is served first. Arrival, remaining-time,
// Tiresias and priority orders are global; the DRF order is built during the walk in plan.cc.
// Tie-breaks: submit time, then job id, so the order never depends on vector positions.
//
// Tiresias (Gu et al., NSDI'19): queue k holds jobs whose attained GPU-time lies between
// thresholds k-1 and k; lower queues first. Within a queue, 2D-LAS orders by arrival; with a
// GPU-time prior, 2D-Gittins orders by the Gittins index of the job's attained service over
// the quantum up to the next threshold. A pending job that has waited longer than
// starvation_factor x its last run is promoted to queue 0.
#pragma once

#include <optional>
#include <vector>

#include "sched/policy.h"
#include "sched/policy_config.h"
#include "sched/snapshot.h"

namespace trainyard::sched {

struct RankKey {
  int64_t major = 0;
  double minor = 0;
  Time submitted{};
  JobId id;
  auto operator<=>(const RankKey&) const = default;
};

// Empirical GPU-time distribution with O(log n) Gittins-index queries.
class GittinsIndex {
 public:
  explicit GittinsIndex(std::vector<double> samples_gpu_seconds);
  bool empty() const { return sorted_.empty(); }
  // P(S - a <= d | S > a) / E[min(S - a, d) | S > a]; 0 when no sample exceeds a.
  double index(double attained, double quantum) const;

 private:
  std::vector<double> sorted_;
  std::vector<double> prefix_;  // prefix_[i] = sum of sorted_[0..i)
};

// The job's queue by attained service alone.
int tiresias_service_queue(const SnapshotJob& job, const TiresiasConfig& cfg);
// The queue it is ranked in: queue 0 when starved, else its service queue. Starvation only
// reorders waiting jobs; preemption compares service queues, so a promoted job never preempts
// (that would let two jobs promote and preempt each other forever).
int tiresias_queue(const SnapshotJob& job, Time now, const TiresiasConfig& cfg);

// Indices of the jobs to consider, best first: pending jobs, plus running ones when
// `include_running` (preemptive policies rank both to decide who may preempt whom).
std::vector<int> rank_jobs(const Snapshot& snap, const PolicyConfig& cfg, QueueOrderKind order,
                           bool include_running);

// The earliest future time at which the policy's decisions may change without any event (a
// running job crossing a Tiresias threshold, a waiting job reaching the starvation limit, a
// running job's minimum run time ending while others wait, a goodput round); drivers call
// plan() again then. nullopt when they only change on events.
std::optional<Time> next_decision_time(const Snapshot& snap, const PolicyConfig& cfg);

}  // namespace trainyard::sched
