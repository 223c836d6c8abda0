// Benchmark baseline: the textbook filter-then-score scheduler. Pending jobs in arrival order;
// for each, every node is filtered and scored (kube-scheduler with percentageOfNodesToScore
// at 100%) and the best one taken; gangs take the highest-scoring nodes. Greedy, no quotas,
// no preemption. Plans differ from sched::plan(); it exists only to compare costs.
#pragma once

#include "sched/policy_config.h"
#include "sched/snapshot.h"

namespace trainyard::bench {

struct NaiveOptions {
  sched::PlacementStrategy strategy = sched::PlacementStrategy::Pack;
  bool memo = false;  // skip requests whose shape already failed (as plan() does)
};

// Returns how many jobs it started.
int naive_plan(const sched::Snapshot& snap, const NaiveOptions& opts);

}  // namespace trainyard::bench
