#include "model/scaling.h"

#include <algorithm>
#include <cmath>

#include "model/accelerator.h"

namespace trainyard::model {

double ScalingModel::step_seconds(int gpus, int nodes, double global_batch,
                                  double compute_speed) const {
  const double r = std::max(1, gpus);
  const double local = global_batch / r;
  const double steps =
      max_local_batch > 0 ? std::max(1.0, std::ceil(local / max_local_batch)) : 1.0;
  const auto& c = coef;
  const double speed = std::max(compute_speed, 1e-9);
  double steps_taken = steps;
  // One replica above the initial batch accumulates over at least two steps (as Pollux's
  // simulator and goodput model have it).
  if (gpus <= 1 && !iterations.empty() && global_batch > iterations.front().first * (1 + 1e-9))
    steps_taken = std::max(steps_taken, 2.0);
  double step = steps_taken * (c[0] + c[1] * local / steps_taken) / speed;
  if (gpus > 1) step += c[2] + c[3] * (r - 2);
  if (nodes > 1) step += c[4] + c[5] * (r - 2);
  return std::max(step, c[0] / speed);  // the fit never goes below one GPU's fixed cost
}

double ScalingModel::iterations_at(double global_batch) const {
  if (iterations.empty()) return 1;
  if (iterations.size() == 1) return iterations.front().second;
  size_t hi = 1;
  while (hi + 1 < iterations.size() && iterations[hi].first < global_batch) ++hi;
  const double x0 = std::log(iterations[hi - 1].first), x1 = std::log(iterations[hi].first);
  const double y0 = std::log(iterations[hi - 1].second), y1 = std::log(iterations[hi].second);
  return std::exp(y0 + (y1 - y0) * (std::log(global_batch) - x0) / (x1 - x0));
}

double ScalingModel::time_to_target(int r, int nodes, double global_batch,
                                    double compute_speed) const {
  return iterations_at(global_batch) * step_seconds(r, nodes, global_batch, compute_speed);
}

double ScalingModel::speed(int r, int nodes, double global_batch, double compute_speed) const {
  const int ref_nodes = (replicas + gpus_per_node - 1) / std::max(1, gpus_per_node);
  const double ref = time_to_target(replicas, ref_nodes, batch, 1.0);
  return ref / time_to_target(r, nodes, global_batch, compute_speed);
}

double ScalingModel::best_batch(int r, int nodes, double compute_speed) const {
  double best = batch;
  double best_time = time_to_target(r, nodes, batch, compute_speed);
  for (const auto& [b, iters] : iterations) {
    if (b == batch) continue;
    const double t = time_to_target(r, nodes, b, compute_speed);
    if (t < best_time) {
      best = b;
      best_time = t;
    }
  }
  return best;
}

void ScalingModel::prepare() {
  epoch_work_end_.clear();
  if (epochs.empty() || stat_batches.empty()) return;
  double before = 0, total = 0;
  for (size_t e = 0; e < epochs.size(); ++e) {
    total += std::max(0.0, epochs[e].progress_end - before) / gain(e, batch);
    before = epochs[e].progress_end;
    epoch_work_end_.push_back(total);
  }
  if (total <= 0) {
    epoch_work_end_.clear();
    return;
  }
  for (double& w : epoch_work_end_) w /= total;
  epoch_work_end_.back() = 1;
}

size_t ScalingModel::epoch_at(double done) const {
  if (epoch_work_end_.empty()) return 0;
  const auto it = std::upper_bound(epoch_work_end_.begin(), epoch_work_end_.end(), done + 1e-12);
  return std::min(static_cast<size_t>(it - epoch_work_end_.begin()), epoch_work_end_.size() - 1);
}

double ScalingModel::gain(size_t e, double global_batch) const {
  if (e >= epochs.size() || stat_batches.empty()) return 1;
  const auto& g = epochs[e].grad;
  // The statistics at `global_batch`: linear between the profiled batches around it, the
  // nearest profiled one outside their range.
  size_t hi = 0;
  while (hi + 1 < stat_batches.size() && stat_batches[hi] < global_batch) ++hi;
  double sqr = g[hi].first, var = g[hi].second;
  if (hi > 0 && global_batch < stat_batches[hi]) {
    const double t =
        (global_batch - stat_batches[hi - 1]) / (stat_batches[hi] - stat_batches[hi - 1]);
    sqr = g[hi - 1].first + t * (g[hi].first - g[hi - 1].first);
    var = g[hi - 1].second + t * (g[hi].second - g[hi - 1].second);
  }
  const double scale = global_batch / stat_batches.front();
  const double denom = var / scale + sqr;
  return denom > 0 ? (var + sqr) / denom : 1.0;
}

double ScalingModel::epoch_speed(size_t e, int gpus, int nodes, double global_batch,
                                 double compute_speed) const {
  const int ref_nodes = (replicas + gpus_per_node - 1) / std::max(1, gpus_per_node);
  const double ref = gain(e, batch) / step_seconds(replicas, ref_nodes, batch, 1.0);
  return gain(e, global_batch) / step_seconds(gpus, nodes, global_batch, compute_speed) / ref;
}

double ScalingModel::adaptive_batch(size_t e, int gpus, int nodes, double compute_speed) const {
  if (stat_batches.empty()) return batch;
  const double largest = stat_batches.back();
  const double smallest =
      std::min(largest, std::max(stat_batches.front(), min_local_batch * std::max(1, gpus)));
  constexpr int kPoints = 50;
  double best = smallest, best_rate = -1;
  for (int i = 0; i < kPoints; ++i) {
    const double b =
        smallest * std::pow(largest / smallest, static_cast<double>(i) / (kPoints - 1));
    const double rate = gain(e, b) / step_seconds(gpus, nodes, b, compute_speed);
    if (rate > best_rate) {
      best_rate = rate;
      best = b;
    }
  }
  return best;
}

std::vector<PaceStretch> ScalingModel::pace(double done, int gpus, int nodes, double compute_speed,
                                            bool adaptive) const {
  std::vector<PaceStretch> out;
  if (!has_epochs()) {
    const double b = adaptive ? best_batch(gpus, nodes, compute_speed) : batch;
    out.push_back({1.0, speed(gpus, nodes, b, compute_speed), b});
    return out;
  }
  for (size_t e = epoch_at(done); e < epoch_work_end_.size(); ++e) {
    const double b = adaptive ? adaptive_batch(e, gpus, nodes, compute_speed) : batch;
    out.push_back({epoch_work_end_[e], epoch_speed(e, gpus, nodes, b, compute_speed), b});
  }
  return out;
}

double gpu_compute_speed(const Accelerator* accel, double reference_bandwidth_gbps) {
  if (accel == nullptr || accel->memory_bw_gbps <= 0 || reference_bandwidth_gbps <= 0) return 1.0;
  return accel->memory_bw_gbps / reference_bandwidth_gbps;
}

}  // namespace trainyard::model
