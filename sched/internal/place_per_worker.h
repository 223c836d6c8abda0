// Placement of fractional-GPU, MIG and CPU-only jobs: one worker at a time, each on the best
// scoring spot of all nodes that pass the filters (earlier workers' spots taken into account),
// found through ClusterState's MIG and shared-GPU node lists where that gives the same spot.
// Internal to sched/; place() dispatches here.
#pragma once

#include "sched/placement.h"

namespace trainyard::sched::internal {

PlaceResult place_per_worker(const SnapshotJob& job, const ClusterState& state,
                             const PlaceOptions& opts);
// Whether node `node_idx` has a spot for one worker of the job now.
bool has_worker_spot(const SnapshotJob& job, const ClusterState& state, int node_idx,
                     const PlaceOptions& opts);

}  // namespace trainyard::sched::internal
