// The running jobs of one plan as preemption candidates, least valuable first, with what the
// victim search reads of each (eligibility facts, placement, distinct nodes, CPU and memory)
// copied compactly in that order, so that a search walks memory in order instead of jumping
// between SnapshotJobs. Internal to sched/; built by preempt_for() on first use.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/job.h"
#include "sched/policy.h"
#include "sched/policy_config.h"
#include "sched/snapshot.h"

namespace trainyard::sched::internal {

// What victim eligibility reads of a job.
struct VictimFacts {
  bool running_preemptible = false;  // Running (not already leaving) and preemptible
  int team = -1;
  int priority = 0;
  int service_queue = 0;  // Tiresias queue by attained service
  Duration remaining{0};
};
VictimFacts facts_of(const SnapshotJob& job, const TiresiasConfig& tiresias);

// The order is fixed for one plan; only who is leaving (preempting, or condemned by this plan)
// changes. Least valuable first: by the rule's own measure of value (priority for
// LowerPriority, service queue for LowerServiceQueue), then the least work at risk (a job with a
// fresh checkpoint loses less; SnapshotJob::work_at_risk), then the lowest rank; ties by id. For
// reclaim, the newest start first. LongerRemaining keeps the policy's rank alone, since
// remaining time is its whole point.
struct VictimOrder {
  bool built = false;
  std::vector<int> jobs;           // job indices of running and preempting jobs
  std::vector<int32_t> pos_of;     // per job index: position in `jobs`, -1 if not running
  std::vector<int32_t> leaving;    // positions in `jobs` of leaving jobs, ascending
  std::vector<VictimFacts> facts;  // per position
  std::vector<uint8_t> gone;       // per position: preempting, or condemned by this plan
  // Per position, a later one with no gone position in between (jobs only start leaving), so
  // the search skips runs of gone jobs; see staying_from().
  std::vector<int32_t> skip;

  // `rank_of` per job index (ignored for reclaim). Marks preempting jobs gone and leaving.
  // Jobs whose attempt started less than `min_runtime` before snap.now are not eligible.
  void build(const Snapshot& snap, std::span<const int32_t> rank_of, VictimRule rule,
             const TiresiasConfig& tiresias, Duration min_runtime);
  // The first position at or after `pos` whose job is not gone (jobs.size() if none).
  int32_t staying_from(int32_t pos) {
    return pos < static_cast<int32_t>(gone.size()) && gone[pos] ? skip_gone(pos) : pos;
  }
  std::span<const Assignment> placement(int32_t pos) const {
    return std::span(assignments_)
        .subspan(first_[pos].assignment, first_[pos + 1].assignment - first_[pos].assignment);
  }
  // The distinct nodes of placement(pos).
  std::span<const int32_t> nodes(int32_t pos) const {
    return std::span(nodes_).subspan(first_[pos].node, first_[pos + 1].node - first_[pos].node);
  }
  // The job's per-worker CPU and memory (what ClusterState counts), without its GPU request.
  const model::WorkerRequest& worker(int32_t pos) const { return workers_[pos]; }

 private:
  int32_t skip_gone(int32_t pos);

  struct First {
    int32_t assignment = 0;
    int32_t node = 0;
  };
  std::vector<Assignment> assignments_;  // placements of all positions, back to back
  std::vector<int32_t> nodes_;           // distinct nodes of each placement, back to back
  std::vector<First> first_;             // per position (and one past the last)
  std::vector<model::WorkerRequest> workers_;
};

}  // namespace trainyard::sched::internal
