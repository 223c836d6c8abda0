// What the scheduler knows of a job's past, computed by one rule in both drivers, so that a
// policy reading it decides the same in a simulation as on the server:
//   - attained service (sched::SnapshotJob::attained_gpu_time: Tiresias's queues, fair share):
//     the GPU time of the attempts that ended, plus the running attempt's at the share it
//     holds, which for an elastic job is the workers it was placed with, not the spec's count;
//   - the last attempt's length (last_run: Tiresias's starvation promotion);
//   - what is left of its work (remaining: srtf). The simulator knows a job's true length; the
//     server knows only its time limit and passes that as `total`.
#pragma once

#include <algorithm>
#include <cstdint>

#include "model/job.h"
#include "model/quantity.h"
#include "util/clock.h"

namespace trainyard::drive {

// The GPU share an attempt holds: each worker's share (a GPU, a fraction, a MIG slice) times
// the workers it runs with.
inline int64_t attempt_milli(const model::WorkerRequest& worker, int workers) {
  return (worker.gpu_share() * workers).value();
}

// GPU time received by `now`: `before` (the attempts that ended) plus the current attempt's,
// which began at `start` holding `milli` thousandths of a GPU.
inline util::Duration attained_service(util::Duration before, util::Time start, int64_t milli,
                                       util::Time now) {
  return before + (now - start) * milli / model::kMilliPerGpu;
}

// How long an attempt that began at `start` ran when it ended at `end` (0 if it never began).
inline util::Duration attempt_length(util::Time start, util::Time end) {
  return end > start ? end - start : util::Duration(0);
}

// What is left of `total` after `done`; never below zero.
inline util::Duration remaining(util::Duration total, util::Duration done) {
  return total - std::min(total, done);
}

}  // namespace trainyard::drive
