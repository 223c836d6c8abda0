// Seeded, realistic scheduler snapshots for benchmarks and plan-equivalence checks: a mix of
// GPU models (a few MIG nodes), a cluster already `busy` full of running jobs, Philly-like
// pending requests (mostly 1 GPU, some 2/4/8, a few gangs, fractional and MIG), team quotas.
// Deterministic: the same shape gives the same snapshot on every platform (own RNG helpers).
#pragma once

#include <cstdint>

#include "sched/snapshot.h"

namespace trainyard::bench {

struct ClusterShape {
  int nodes = 1000;  // 8 GPUs each
  int pending = 10000;
  int teams = 30;
  double busy = 0.8;        // fraction of GPUs held by running jobs
  int nodes_per_rack = 32;  // 0 = no racks
  bool team_quotas = true;
  bool rare_requests = false;  // also CPU-only workers and multi-worker fractional jobs  // nominal
                               // quota per team (sums to capacity), one cohort per 10
  uint64_t seed = 1;
};

sched::Snapshot make_bench_snapshot(const ClusterShape& shape);

}  // namespace trainyard::bench
