// The server's in-memory view of a job that has not finished: its stored record, its parsed
// manifest, where it runs and which processes are its workers, and whether it is being stopped.
// Owned by ControlPlane and guarded by its mutex.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "model/job_manifest.h"
#include "sched/snapshot.h"
#include "sched/start_estimate.h"
#include "server/node_book.h"
#include "store/store.h"

namespace trainyard::server {

struct WorkerProcess {
  int rank = 0;
  exec::ProcessRef ref;  // pid 0 = not started or not found
  std::string run_dir;
  bool finished = false;
  exec::ProcessStatus status;
};

// Why the workers of a running job are being stopped; decides the state they end in.
enum class StopCause { None, Preempt, Cancel, Deadline, Failure };

struct ActiveJob {
  store::JobRecord rec;
  model::JobManifest manifest;
  std::vector<util::JobId> depends_on;  // resolved ids
  Placement placement;                  // current attempt (Placed/Running/Preempting), nodes by id
  std::vector<WorkerProcess> workers;
  StopCause stop = StopCause::None;
  util::Time kill_at{};  // SIGKILL the workers still alive at this time
  std::string stop_reason;
  std::string interrupted_node;  // the stop is a provider's reclaim of this node
  std::string failure_detail;    // first worker failure of this attempt, e.g. "exited with code 3"
  std::string wait_reason;       // the scheduler's latest explanation while pending
  // When the scheduler expects it to start, while pending (server/start_estimates.h); nullopt
  // until a plan has looked at it.
  std::optional<sched::StartEstimate> start_estimate;
  // Set by recovery when the stored spec cannot be read back: the job is ended (Failed with this
  // reason) once its processes are gone; its GPUs stay booked until then.
  std::string unreadable_spec;
  // Set by recovery when the server stopped while launching the workers: the attempt never ran
  // whole, so ending it requeues the job without counting a failure.
  bool launch_interrupted = false;
  // Set when the executor could not start the attempt now (Slurm refused it or kept it
  // pending): requeued without counting a failure, after the initial retry delay.
  bool launch_refused = false;
  // Set when the executor reported the attempt's node failed or its batch system requeued it:
  // requeued like a preemption, recorded as "interrupted".
  bool interrupted = false;
  // Commit time of the job's newest checkpoint, read from its checkpoint directory at most
  // every few seconds while it runs (the scheduler prefers victims with fresh ones).
  util::Time last_checkpoint{};
  util::Time checkpoint_polled{};
  // Elastic jobs: steps per second measured at each worker count they ran with (from rank 0's
  // step metrics; in memory, so a server restart measures afresh). The goodput policy sizes
  // the job from it.
  std::map<int, double> measured_speed;
};

// Workers of the job's current attempt: as many as it was placed with for an elastic job (the
// goodput policy sizes it), else the spec's.
inline int attempt_workers(const ActiveJob& job) {
  return job.manifest.spec.elastic() && !job.placement.empty() ? placed_workers(job.placement)
                                                               : job.manifest.spec.workers;
}

}  // namespace trainyard::server
