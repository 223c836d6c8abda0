#include "sched/internal/fit_tracker.h"

namespace trainyard::sched::internal {

FitTracker::FitTracker(ClusterState& state, const SnapshotJob& job, const PlaceOptions& opts)
    : state_(state), job_(job), opts_(opts), incremental_(job.worker.gpus > 0 || job.workers == 1) {
  // A single worker that does not fit has capacity 0 everywhere; a gang may have some.
  if (job.worker.gpus == 0 || job.workers == 1) return;
  for (int m = 0; m < static_cast<int>(state.snapshot().gpu_models.size()); ++m) {
    for (int level = job.worker.gpus; level <= model::kMaxGpusPerNode; ++level) {
      for (int32_t idx : state.bucket(m, level)) capacity_ += node_capacity(job, state, idx, opts);
    }
  }
}

bool FitTracker::change(const VictimOrder& order, int32_t pos, int sign) {
  const std::span<const Assignment> placement = order.placement(pos);
  if (incremental_) capacity_ -= capacity_of(order.nodes(pos));
  if (sign > 0) {
    state_.release(placement, order.worker(pos));
  } else {
    state_.apply(placement, order.worker(pos));
  }
  if (!incremental_) return place(job_, state_, opts_).fit == Fit::Fits;
  capacity_ += capacity_of(order.nodes(pos));
  return capacity_ >= job_.workers;
}

int64_t FitTracker::capacity_of(std::span<const int32_t> nodes) const {
  int64_t sum = 0;
  for (int32_t idx : nodes) sum += node_capacity(job_, state_, idx, opts_);
  return sum;
}

}  // namespace trainyard::sched::internal
