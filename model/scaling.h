// How fast a data-parallel training job progresses on an allocation: Pollux's (OSDI'21)
// throughput model with statistical efficiency folded into iterations to the target.
//
// Seconds per iteration at local batch m on r replicas over n nodes, with compute on a GPU
// `compute_speed` times as fast as the GPU the profile was measured on:
//   (a + b m) / compute_speed + [r > 1] (c + d (r - 2)) + [n > 1] (e + f (r - 2))
// Local batches above `max_local_batch` accumulate gradients over several steps (compute
// repeated, one synchronisation). Iterations to the target at global batch B come from the
// validation curves (log-log between profiled batches), so a larger batch that needs more
// samples to converge is charged for it: time to target = iterations(B) x step time, and a
// job's goodput on an allocation is the inverse of that time.
//
// The statistical efficiency is a whole-run average per batch size, not Pollux's per-phase
// gradient noise scale, and a faster GPU speeds up only the compute term, in proportion to its
// memory bandwidth (compute_speed; model::gpu_compute_speed).
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace trainyard::model {

struct Accelerator;

struct ScalingModel {
  std::string application;
  std::array<double, 6> coef{};  // a, b, c, d, e, f (seconds)
  double max_local_batch = 0;
  std::vector<std::pair<int, int>> iterations;  // (global batch, iterations), ascending
  // The configuration the job asked for: its trace duration was measured there.
  int replicas = 1;
  int batch = 1;
  int gpus_per_node = 4;  // of the profiled nodes (the reference placement is packed)
  double reference_bandwidth_gbps = 320;  // the profiled GPU's (T4)

  // Seconds per iteration at global batch `batch` on `replicas` GPUs over `nodes` nodes.
  double step_seconds(int gpus, int nodes, double global_batch, double compute_speed) const;
  // Iterations to the target at global batch `batch`.
  double iterations_at(double global_batch) const;
  // Seconds to the target on that allocation.
  double time_to_target(int gpus, int nodes, double global_batch, double compute_speed) const;
  // Speed relative to the requested configuration (its replicas packed on profiled nodes at
  // its batch on the profiled GPU): 2.0 = finishes in half the time.
  double speed(int gpus, int nodes, double global_batch, double compute_speed) const;
  // Of the profiled global batches and the requested one, the one with the shortest time to
  // the target on that allocation. The smallest profiled batch is the application's initial
  // batch size, as Pollux (AdaptDL) jobs start from it and adapt.
  double best_batch(int gpus, int nodes, double compute_speed) const;
};

// A GPU's compute speed relative to one with `reference_bandwidth_gbps` of memory bandwidth
// (1.0 when the accelerator is unknown).
double gpu_compute_speed(const Accelerator* accel, double reference_bandwidth_gbps);

}  // namespace trainyard::model
