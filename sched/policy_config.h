// Knobs of the scheduling policies. A PolicyConfig names one policy; the other fields tune
// the stages that policy uses. Defaults are the documented ones (docs/simulator.md).
#pragma once

#include <string>
#include <vector>

#include "util/clock.h"

namespace trainyard::sched {

enum class PlacementStrategy { Pack, Spread };

struct TiresiasConfig {
  // Queue boundaries on attained GPU-time, in GPU-seconds; jobs start in queue 0.
  std::vector<double> queue_thresholds = {3200.0, 25600.0};
  // A job waiting longer than factor x its last run time is promoted to queue 0 (0 = off).
  double starvation_factor = 8.0;
  // GPU-time samples (GPU-seconds). When present, jobs within a queue are ordered by their
  // Gittins index over this distribution (2D-Gittins) instead of arrival (2D-LAS).
  std::vector<double> gittins_prior;
};

struct FairConfig {
  // Pending jobs of a team under its nominal quota may preempt jobs of teams in the same
  // cohort that are borrowing (over their nominal quota).
  bool reclaim = true;
  // Half-life of past usage in the team order (0 = current usage only). With it, a team that
  // used much of the cluster lately yields to teams that did not, as Slurm's
  // PriorityDecayHalfLife (default 7 days there) and Kueue's admission fair sharing do.
  util::Duration usage_half_life{0};
};

// The goodput policy (sched/goodput.cc).
struct GoodputConfig {
  // Scheduling round: plan() is called at least this often while jobs run, as the speed-up of
  // a reallocation changes with the jobs' progress and arrivals (Pollux: 60 s).
  util::Duration round = util::seconds(60);
  // A running job is restarted on a new allocation only when its modelled speed changes by at
  // least this share (a restart costs its grace period, the work since its last checkpoint and
  // the restart delay). Pollux discounts restarts the same way.
  double restart_gain = 0.25;
  // GPUs left after pass 1 favour jobs with less attained service: a job's gain is divided by
  // 1 + attained_weight x its attained GPU-hours (0 = Pollux's objective alone).
  double attained_weight = 1.0;
};

// The autoscaler (sched/autoscale.h). Only pools marked autoscaled are touched.
struct AutoscaleConfig {
  // A preemptible job waits this long for spot capacity before on-demand may be bought for it.
  util::Duration spot_fallback_wait = util::seconds(600);
  // Nodes bought count against a team's budget as this many hours of their price.
  util::Duration budget_horizon = util::seconds(3600);
};

struct PolicyConfig {
  std::string name = "fifo";  // fifo | backfill | srtf | tiresias | fair | priority | goodput
  PlacementStrategy placement = PlacementStrategy::Pack;
  // A running job is not a preemption victim (for any policy's rule: priority, remaining time,
  // service queue, quota reclaim) until its current attempt has run this long, as Kueue's,
  // KAI's and Slurm's minimum run times (PreemptExemptTime). Without it a preemptive policy can
  // start and preempt the same jobs again and again before any of them saves a checkpoint.
  // Cloud reclaims of spot nodes ignore it (the provider does not wait).
  util::Duration min_runtime = util::seconds(300);
  // At most this many victim searches (preemption or reclaim) per plan, as Slurm caps starts
  // per cycle (sched_max_job_start) and Kueue admits one head per queue per cycle: the jobs
  // ranked below wait with PreemptionDeferred and are searched in the next plan. Keeps one
  // plan() within ~50 ms at 10,000 nodes; 0 = no limit.
  int max_victim_searches = 128;
  TiresiasConfig tiresias;
  FairConfig fair;
  GoodputConfig goodput;
  AutoscaleConfig autoscale;
};

}  // namespace trainyard::sched
