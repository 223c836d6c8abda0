// Checks that a plan keeps the house rules against its snapshot: no GPU, MIG slice, CPU or
// memory over-committed (running jobs plus starts), every gang started whole, only pending
// jobs started and only running jobs preempted, each job at most once, and every start
// admitted within team quota at its turn; no job that is not preemptible started on a spot
// node, no pool scaled past max_nodes, no node released while a job holds it. Used after every
// plan() in tests and simulations.
#pragma once

#include "sched/plan.h"
#include "sched/snapshot.h"
#include "util/status.h"

namespace trainyard::sched {

// `min_runtime`: no preempted job may have started less than this before snap.now (the
// policy's PolicyConfig::min_runtime; 0 checks nothing).
util::Status check_plan(const Snapshot& snap, const Plan& plan, bool quota_enforced,
                        Duration min_runtime = Duration(0));

}  // namespace trainyard::sched
