// The only way trainyard reaches GPUs. Two implementations: NVML, loaded with dlopen at run
// time so nothing needs the driver to build (nvml_sampler.cc), and a synthetic one for
// machines without GPUs (synthetic_sampler.cc). Implementations are thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/gpu_device.h"
#include "util/status.h"

namespace trainyard::telemetry {

class GpuSampler {
 public:
  virtual ~GpuSampler() = default;
  // The GPUs of this machine, ordered by index. Unavailable when the driver cannot be used.
  virtual util::Result<std::vector<GpuDevice>> devices() = 0;
  // "nvml", "synthetic", or "none" (the machine has no usable GPUs).
  virtual std::string_view kind() const = 0;
};
using GpuSamplerPtr = std::unique_ptr<GpuSampler>;

// "sim:4xH100-80GB" (also "sim:2xA100-80GB,1xL4"): synthetic GPUs of known accelerator
// models, UUIDs "GPU-sim-<index>-<model>", marked simulated. An entry ending in ":mig"
// ("sim:1xA100-40GB:mig") has MIG mode on, with no instances made yet.
util::Result<GpuSamplerPtr> make_synthetic_sampler(std::string_view spec);
// NVML through dlopen("libnvidia-ml.so.1"); Unavailable with the reason when it cannot load.
util::Result<GpuSamplerPtr> make_nvml_sampler();
// The same from a given library path only (e.g. a fake NVML built by the tests).
util::Result<GpuSamplerPtr> make_nvml_sampler_for_test(const std::string& library_path);
// "auto" (NVML if it loads, else no GPUs), "none", "nvml", or a "sim:..." spec.
util::Result<GpuSamplerPtr> make_gpu_sampler(std::string_view spec);

}  // namespace trainyard::telemetry
