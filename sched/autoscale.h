// The autoscaler: a pure policy that plan() runs after it has placed what fits. For pending jobs
// that could not start and that a pool's node shape could hold, it buys nodes (bin-packing the
// gangs onto the nodes it would buy, within the pools' maxima and the teams' budgets); it gives
// back nodes idle longer than their pool's idle timeout. Spot first for preemptible jobs, on
// demand after AutoscaleConfig::spot_fallback_wait or while spot is unavailable; a job that is
// not preemptible never gets spot capacity.
#pragma once

#include "sched/plan.h"
#include "sched/policy_config.h"
#include "sched/snapshot.h"

namespace trainyard::sched {

// Appends scale-ups and releases to `plan` and turns the wait reason of jobs that nodes were
// bought for (now or earlier, still provisioning) into AwaitingNodes. No-op without pools.
void autoscale(const Snapshot& snap, const AutoscaleConfig& config, Plan& plan);

// Young's rule: the checkpoint interval that minimises expected lost work plus checkpoint
// cost, sqrt(2 · cost · MTBF), for `interruptions_per_hour` on the job's nodes. Zero rate: 0
// (no periodic checkpoints needed).
Duration young_checkpoint_interval(Duration checkpoint_cost, double interruptions_per_hour);

}  // namespace trainyard::sched
