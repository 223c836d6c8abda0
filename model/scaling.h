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
// Statistical efficiency: with per-epoch gradient statistics (`epochs`, from the validation
// curves), a job progresses as Pollux's simulator has it. In epoch e an iteration at global
// batch B makes progress gain_e(B) = (var + sqr) / (var / s + sqr), s = B / the initial
// (smallest profiled) batch, (sqr, var) the epoch's gradient statistics at B (linear between
// profiled batches); the epoch ends at a fixed progress. Early epochs have little gradient
// noise, so large batches waste samples there and pay off later: a job that adapts its batch
// (AdaptDL) picks, each epoch, the batch with the most progress per second on its allocation.
// Without epochs, efficiency is the whole-run average folded into iterations(B).
//
// A faster GPU speeds up only the compute term, in proportion to its memory bandwidth
// (compute_speed; model::gpu_compute_speed).
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace trainyard::model {

struct Accelerator;

// One epoch of the validation curves: the progress at its end and the gradient statistics
// (grad_sqr, grad_var) measured during it at each of ScalingModel::stat_batches.
struct EpochStats {
  double progress_end = 0;
  std::vector<std::pair<double, double>> grad;
};

// A stretch of a run at one pace: work up to `work_end` (a fraction of the whole run's work at
// the requested configuration) at `speed` times the requested configuration's pace in the same
// epoch, with global batch `batch`.
struct PaceStretch {
  double work_end = 1;
  double speed = 1;
  double batch = 0;
};

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
  // Per-epoch statistics (empty: none known). Batches adapt within
  // [max(initial batch, min_local_batch x GPUs), the largest profiled batch].
  double min_local_batch = 1;
  std::vector<double> stat_batches;  // ascending; the first is the initial batch
  std::vector<EpochStats> epochs;
  // The job's run time at its requested configuration (seconds; 0 = unknown), to place a
  // remaining run time on the epochs.
  double work_seconds = 0;

  // Call after filling `epochs`, `stat_batches` and `batch`: derives the share of the run's
  // work (at the requested batch) that each epoch holds.
  void prepare();
  bool has_epochs() const { return !epoch_work_end_.empty(); }
  // The epoch that the fraction `done` of the run's work falls in.
  size_t epoch_at(double done) const;
  // Progress per iteration in epoch `e` at global batch `batch`.
  double gain(size_t e, double global_batch) const;
  // Speed in epoch `e` relative to the requested configuration in that epoch.
  double epoch_speed(size_t e, int gpus, int nodes, double global_batch,
                     double compute_speed) const;
  // The global batch with the most progress per second in epoch `e` on that allocation
  // (Pollux's search: 50 batches spaced geometrically over the allowed range).
  double adaptive_batch(size_t e, int gpus, int nodes, double compute_speed) const;
  // The rest of a run from `done`, epoch by epoch, for a job that adapts its batch each epoch
  // (adaptive) or keeps `batch`.
  std::vector<PaceStretch> pace(double done, int gpus, int nodes, double compute_speed,
                                bool adaptive) const;

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

 private:
  std::vector<double> epoch_work_end_;  // cumulative, per epoch; the last is 1
};

// A GPU's compute speed relative to one with `reference_bandwidth_gbps` of memory bandwidth
// (1.0 when the accelerator is unknown).
double gpu_compute_speed(const Accelerator* accel, double reference_bandwidth_gbps);

}  // namespace trainyard::model
