#include "drive/cost_share.h"

namespace trainyard::drive {

int64_t held_milli(const model::Accelerator* acc, const sched::Assignment& a) {
  if (a.gpu_idx < 0) return 0;
  if (a.mig_profile < 0) return a.milli > 0 ? a.milli : model::kMilliPerGpu;
  if (acc == nullptr || a.mig_profile >= static_cast<int>(acc->mig_profiles.size())) return 0;
  return model::mig_milli(acc->mig_profiles[a.mig_profile].compute_slices);
}

int64_t held_milli(const sched::Snapshot& snap, const sched::Assignment& a) {
  const int gpu_model = snap.nodes[a.node_idx].gpu_model;
  return held_milli(gpu_model >= 0 ? snap.accelerators[gpu_model] : nullptr, a);
}

}  // namespace trainyard::drive
