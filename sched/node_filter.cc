#include "sched/internal/node_filter.h"

#include <algorithm>

namespace trainyard::sched::internal {
namespace {

bool wants_gpu(const model::WorkerRequest& w) {
  return w.gpus > 0 || w.gpu_milli.value() > 0 || !w.mig_profile.empty();
}

}  // namespace

const model::MigProfile* mig_profile_on(const Snapshot& snap, const SnapshotNode& n,
                                        const std::string& profile, int* index) {
  if (n.gpu_model < 0) return nullptr;
  const model::Accelerator* accel = snap.accelerators[n.gpu_model];
  if (accel == nullptr) return nullptr;
  for (size_t i = 0; i < accel->mig_profiles.size(); ++i) {
    if (accel->mig_profiles[i].name == profile) {
      if (index) *index = static_cast<int>(i);
      return &accel->mig_profiles[i];
    }
  }
  return nullptr;
}

// Requirements node `idx` must meet whatever runs on it. 0 when it may host a worker.
uint8_t static_mismatch(const SnapshotJob& job, const Snapshot& snap, int idx,
                        const PlaceOptions& opts) {
  const SnapshotNode& n = snap.nodes[idx];
  const model::WorkerRequest& w = job.worker;
  if (!spot_ok(job, n)) return kFilterSpot;
  if (wants_gpu(w)) {
    if (n.gpu_model < 0 || n.gpu_count == 0) return kFilterGpus;
    if (!model_allowed(job, n.gpu_model)) return kFilterGpuModel;
    if (!w.mig_profile.empty()) {
      if (!n.mig_enabled || mig_profile_on(snap, n, w.mig_profile, opts, nullptr) == nullptr) {
        return kFilterMig;
      }
    } else if (n.mig_enabled) {
      return kFilterMig;  // MIG nodes offer only MIG instances
    }
    if (w.gpus > n.gpu_count) return kFilterGpus;
  }
  if (!selector_ok(job, n, idx, opts)) return kFilterSelector;
  if (w.cpu > n.cpu) return kFilterCpu;
  if (w.memory > n.memory) return kFilterMemory;
  return 0;
}

}  // namespace trainyard::sched::internal
