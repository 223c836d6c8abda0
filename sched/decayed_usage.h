// Fair share with usage decay: each team's GPU usage integrated over time with a half-life, as
// Slurm's PriorityDecayHalfLife and Kueue's admission fair sharing do. Both drivers (the
// simulator and the server) call advance() with the GPUs each team holds; the share it gives is
// what SnapshotTeam::past_usage_share carries to the fair policy.
#pragma once

#include <span>
#include <vector>

#include "util/clock.h"

namespace trainyard::sched {

class DecayedUsage {
 public:
  // half_life > 0.
  explicit DecayedUsage(util::Duration half_life) : half_life_(half_life) {}

  // Accounts `gpus[t]` held by each team, and `capacity` GPUs in the cluster, from the previous
  // call to `now` (the first call only starts the clock). Teams may be added between calls.
  void advance(util::Time now, std::span<const double> gpus, double capacity);

  // The team's decayed GPU-time over the cluster's decayed GPU-time capacity, 0..1 (0 before
  // any time has passed, and for teams never seen).
  double share(int team) const;

 private:
  util::Duration half_life_;
  bool started_ = false;
  util::Time last_{};
  std::vector<double> used_;  // decayed GPU-seconds per team
  double capacity_ = 0;       // decayed GPU-seconds of the whole cluster
};

}  // namespace trainyard::sched
