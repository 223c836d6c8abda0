// Why each pending job waits and when it is expected to start, from the reconcile loop's own
// snapshot and plan: the scheduler's reason, the jobs holding the GPUs it waits for
// (sched/gpu_holders.h), and the start estimate of sched/start_estimate.h, as the job API shows
// them (`estimatedStart`, `ls -o wide`, `show`). Guarded by ControlPlane's mutex.
#pragma once

#include <cstddef>
#include <map>

#include <optional>

#include "model/api_views.h"
#include "sched/plan.h"
#include "sched/policy_config.h"
#include "sched/snapshot.h"
#include "server/active_job.h"

namespace trainyard::server {

class StartEstimator {
 public:
  // Sets wait_reason of every job in `plan.waiting`, and start_estimate of every pending job in
  // `active`: estimates are worked out again when jobs came, left, started or were preempted,
  // or every few seconds (each one replays plan() up to 32 times), and kept in between. Pending
  // jobs the plan did not see (held, backing off) get no time, with their wait reason as why.
  void explain(std::map<util::JobId, ActiveJob>& active, const sched::Snapshot& snap,
               const sched::Plan& plan, const sched::PolicyConfig& cfg);

 private:
  util::Time last_{};
  size_t last_jobs_ = 0;
};

// The start estimate of a pending job as the job API shows it (estimatedStart: RFC 3339, or
// null when unknown; its basis and reason); nullopt for other jobs and before a plan saw it.
std::optional<model::StartEstimateView> start_estimate_view(const ActiveJob& job);

}  // namespace trainyard::server
