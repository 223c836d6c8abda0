// A job's request: workers x per-worker resources, who it belongs to, how it may be treated
// (priority, preemptible, checkpoints) and where it may run (models, labels, dependencies).
// Plain data; the scheduler reads it, drivers (simulator, server) own it.
#pragma once

#include <string>
#include <vector>

#include "model/labels.h"
#include "model/quantity.h"
#include "util/clock.h"
#include "util/ids.h"

namespace trainyard::model {

// What one worker of a gang needs. Exactly one GPU form is used:
//   gpus > 0            whole GPUs;
//   gpu_milli in 1..999 a fractional share of one (non-MIG) GPU;
//   mig_profile != ""   one MIG instance of that profile ("1g.10gb");
//   none of them        a CPU-only worker.
struct WorkerRequest {
  int gpus = 0;
  GpuMilli gpu_milli{0};
  std::string mig_profile;
  CpuMilli cpu{0};
  Bytes memory{0};

  // GPU share one worker takes, in milli-GPUs (a MIG instance counts as compute_slices/7).
  GpuMilli gpu_share() const;
  bool operator==(const WorkerRequest&) const = default;
};

// Named priority classes map to integers; higher runs first.
struct PriorityClass {
  std::string name;
  int value = 0;
};
inline constexpr int kPriorityLow = 0;
inline constexpr int kPriorityNormal = 100;
inline constexpr int kPriorityHigh = 1000;

struct JobSpec {
  std::string name;
  std::string team;
  std::string priority_class = "normal";
  int priority = kPriorityNormal;
  int workers = 1;
  // Elastic gangs: a scheduler that resizes jobs (the goodput policy) may run the job with any
  // number of workers in [min_workers, max_workers], changing it only at a restart (the job
  // resumes from its checkpoint at the new size). 0 = rigid: always `workers`.
  int min_workers = 0;
  int max_workers = 0;
  WorkerRequest worker;
  bool preemptible = true;
  std::vector<std::string> allowed_gpu_models;  // empty = any model
  Labels node_selector;
  std::vector<util::JobId> depends_on;    // start only after these succeeded
  util::Duration runtime_limit{0};        // user's estimate/limit; 0 = none given
  util::Duration checkpoint_interval{0};  // 0 = never checkpoints (restart from zero)

  GpuMilli total_gpu_share() const { return worker.gpu_share() * workers; }
  int total_gpus() const { return worker.gpus * workers; }
  bool elastic() const { return max_workers > 0; }
  bool operator==(const JobSpec&) const = default;
};

}  // namespace trainyard::model
