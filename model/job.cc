#include "model/job.h"

#include "model/accelerator.h"

namespace trainyard::model {

GpuMilli WorkerRequest::gpu_share() const {
  if (gpus > 0) return GpuMilli(gpus * kMilliPerGpu);
  if (!mig_profile.empty()) {
    // Compute slices of the named profile, the same on every MIG-capable model ("3g" = 3/7).
    const int slices = mig_profile[0] - '0';
    if (slices >= 1 && slices <= kMigComputeSlices) return GpuMilli(mig_milli(slices));
    return GpuMilli(0);
  }
  return gpu_milli;
}

}  // namespace trainyard::model
