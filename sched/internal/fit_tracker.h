// Follows whether a pending job fits while the victim search releases running jobs and takes
// them back, one at a time, answering as place(job).fit would but from the nodes each step
// touches. Internal to sched/.
// Exact because: the job does not fit before the first release (preempt_for's caller tried
// place()), and place() fits exactly when node_capacity() summed over all nodes reaches the
// job's workers, so only the touched nodes' share of that sum changes. Requests whose fit is
// not such a sum (several fractional/MIG/CPU-only workers) ask place() after every step.
#pragma once

#include <cstdint>

#include "sched/cluster_state.h"
#include "sched/internal/victim_order.h"
#include "sched/placement.h"

namespace trainyard::sched::internal {

class FitTracker {
 public:
  FitTracker(ClusterState& state, const SnapshotJob& job, const PlaceOptions& opts);

  // Gives back (release) or takes again (apply) what the job at `pos` of `order` holds, on the
  // state; true when the pending job fits afterwards.
  bool release(const VictimOrder& order, int32_t pos) { return change(order, pos, +1); }
  bool apply(const VictimOrder& order, int32_t pos) { return change(order, pos, -1); }

 private:
  bool change(const VictimOrder& order, int32_t pos, int sign);
  int64_t capacity_of(std::span<const int32_t> nodes) const;

  ClusterState& state_;
  const SnapshotJob& job_;
  const PlaceOptions& opts_;
  bool incremental_;
  int64_t capacity_ = 0;  // sum of node_capacity() over all nodes
};

}  // namespace trainyard::sched::internal
