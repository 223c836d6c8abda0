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
  double step = steps * (c[0] + c[1] * local / steps) / speed;
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

double gpu_compute_speed(const Accelerator* accel, double reference_bandwidth_gbps) {
  if (accel == nullptr || accel->memory_bw_gbps <= 0 || reference_bandwidth_gbps <= 0) return 1.0;
  return accel->memory_bw_gbps / reference_bandwidth_gbps;
}

}  // namespace trainyard::model
