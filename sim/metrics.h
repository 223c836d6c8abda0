// Summary metrics of one simulation, the standard ones of the GPU-scheduling literature:
// job completion time (JCT) average and percentiles, queueing delay, makespan, GPU allocation,
// preemptions and the GPU-hours they cost, and fairness between teams. Fairness is Themis's
// finish-time fairness (NSDI'20), rho = JCT / T_iso, where T_iso is the job's completion time
// had its team run alone, first come first served, on an independent cluster of its weighted
// share of the GPUs (N = teams with jobs in the workload). rho > 1: the shared cluster served the
// job worse than the team's fair slice would have. We report the worst rho, the share of jobs
// with rho > 1, and Jain's index over teams of max(1, the team's mean rho): 1 when no team is
// served worse than its slice, lower the more unequally teams are short-changed.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/simulator.h"

namespace trainyard::sim {

struct Summary {
  std::string policy;
  int64_t jobs = 0;
  int64_t unfinished = 0;
  double avg_jct_s = 0, p50_jct_s = 0, p95_jct_s = 0, p99_jct_s = 0;
  double avg_queue_s = 0, p99_queue_s = 0;  // submit to first start
  double makespan_s = 0;
  double gpu_allocation = 0;      // allocated GPU-time / (capacity x makespan)
  double useful_utilization = 0;  // work that counted / (capacity x makespan)
  double preemptions_per_job = 0;
  double gpu_hours_lost = 0;  // thrown-away work + restart delays, in GPU-hours
  double worst_ftf = 0;
  double unfair_share = 0;  // share of jobs with rho > 1
  double jain_teams = 0;
  std::map<std::string, double> avg_jct_by_priority_class;  // "high"/"normal"/"low"
  std::map<std::string, double> avg_jct_by_team;
  double wall_seconds = 0;
  int64_t events = 0;
  int64_t plan_calls = 0;
};

Summary summarize(const SimResult& r);
double percentile(std::vector<double> values, double p);  // p in [0, 100]; nearest-rank
double jain_index(const std::vector<double>& values);
// T_iso of every job of `r.jobs` (same order), in seconds.
std::vector<double> isolated_completion_times(const SimResult& r);

}  // namespace trainyard::sim
