// A seeded synthetic workload: Poisson arrivals, heavy-tailed durations (Gavel's generator by
// default), a GPU-count mix and teams of skewed sizes. Deterministic: the same options (seed
// included) give the identical workload on every platform (own draws, no std distributions).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/workload.h"
#include "util/status.h"

namespace trainyard::sim {

struct GpuCountShare {
  int gpus = 1;
  double share = 0;  // relative weight; weights need not sum to 1
};

// Durations are unit_s * 10^U(lo, hi) with U uniform: short with probability short_share.
// Defaults are Gavel's (OSDI'20) generator: 80% in 60 * 10^[1.5, 3] s (32 min..16.7 h), the
// rest 60 * 10^[3, 4] s (16.7..167 h).
struct DurationMix {
  double unit_s = 60;
  double short_share = 0.8;
  double short_exp_lo = 1.5;
  double short_exp_hi = 3.0;
  double long_exp_lo = 3.0;
  double long_exp_hi = 4.0;
};

struct SyntheticOptions {
  uint64_t seed = 1;
  int64_t jobs = 1000;
  double jobs_per_hour = 60;  // Poisson arrival rate
  DurationMix durations{};
  std::vector<GpuCountShare> gpu_mix = {{1, 0.70}, {2, 0.10}, {4, 0.15}, {8, 0.05}};
  // Jobs larger than this become gangs of workers of at most this many GPUs.
  int gpus_per_node = 8;
  // Teams "team-1".."team-N"; team k gets a share proportional to 1 / k^team_skew (Zipf), so
  // team-1 is the largest. 0 makes them equal.
  int teams = 4;
  double team_skew = 1.0;
  // finalize() rules for priorities, runtime limits and checkpoints; its seed is replaced by
  // `seed` so one number fixes the whole workload.
  TraceOptions finalize_options{};
};

// Generates and finalize()s the workload; InvalidArgument names a bad option.
util::Result<Workload> generate_synthetic(const SyntheticOptions& opts);

}  // namespace trainyard::sim
